"""Verifier settings: one frozen, JSON-safe object per domain, passed to the constructor
and recorded with the verdict; no verifier reads its settings from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifiers import domain as domains
from verifiers.cad.domain import CadSettings
from verifiers.kernels.domain import KernelSettings
from verifiers.settings import SettingsError, VerifierSettings, settings_class, settings_for

ROOT = Path(__file__).resolve().parents[2]


def test_every_domain_names_a_settings_class_that_round_trips_through_json():
    for name, d in domains.domains().items():
        cls = settings_class(name)
        assert issubclass(cls, VerifierSettings)
        assert (cls is VerifierSettings) == (d.settings is None)
        default = cls()
        assert cls.from_dict(json.loads(json.dumps(default.to_dict()))) == default
        assert default.recorded() == {}


def test_settings_round_trip_and_record_only_what_differs():
    s = KernelSettings(device="cpu", workers=2, cache_dir="/tmp/k", compile_baseline=True)
    again = KernelSettings.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s and again.canonical() == s.canonical()
    assert KernelSettings(workers=2).recorded() == {"workers": 2}
    # a dict, the object, or field overrides: the same value
    assert settings_for("cuda", {"workers": 2}) == settings_for("triton", KernelSettings(workers=2))
    assert KernelSettings.coerce(None, workers=2) == KernelSettings(workers=2)


@pytest.mark.parametrize(
    ("domain", "given", "message"),
    [
        ("cad", {"worker": 2}, "unknown cad verifier settings key(s): worker (known: workers)"),
        ("cuda", {"workers": "2"}, "workers must be int or null"),
        ("cuda", {"compile_baseline": 1}, "compile_baseline must be bool"),
        ("triton", {"device": "gpu"}, "device must be one of cpu, cuda"),
        ("cuda", {"timing": "fast"}, "timing must be one of adaptive, fixed, not 'fast'"),
        ("cad", {"workers": 0}, "workers must be at least 1"),
        ("cad", [1], "must be a JSON object"),
        ("rtl", {"workers": 1}, "unknown rtl verifier settings key(s): workers (known: cross"),
        ("nosuch", {"workers": 1}, "the nosuch verifier takes no settings (given: workers)"),
    ],
)
def test_settings_refuse_unknown_keys_and_wrong_types(domain, given, message):
    with pytest.raises(SettingsError) as e:
        settings_for(domain, given)
    assert message in str(e.value)


def test_a_verifier_takes_its_settings_and_records_them_with_the_verdict():
    from verifiers.cad.verifier import CadVerifier
    from verifiers.catalog import load_task

    task = load_task(next((ROOT / "tasks" / "cad").iterdir()))
    for v in (CadVerifier(settings={"workers": 1}), CadVerifier(workers=1)):
        assert v.settings == CadSettings(workers=1)
        verdict = v.verify(task, "")  # format_error: no worker starts
        assert verdict.metrics["settings"] == {"workers": 1}
    assert "settings" not in CadVerifier().verify(task, "").metrics  # defaults: nothing
    with pytest.raises(SettingsError):
        CadVerifier(settings={"workers": 1, "bogus": 1})


def test_the_registry_builds_one_verifier_per_distinct_settings_value():
    from verifiers.registry import get_verifier

    a = get_verifier("cad", {"workers": 1})
    assert get_verifier("cad", CadSettings(workers=1)) is a
    assert get_verifier("cad") is not a and get_verifier("cad").settings == CadSettings()
    assert get_verifier("cad", {}) is get_verifier("cad")
    with pytest.raises(SettingsError):
        get_verifier("cad", {"wrokers": 1})


def test_no_verifier_reads_its_settings_from_the_environment():
    names = ("CRUCIBLE_KERNEL_WORKERS", "CRUCIBLE_CAD_WORKERS", "CRUCIBLE_KERNEL_DEVICE",
             "CRUCIBLE_TORCH_COMPILE_BASELINE", "CRUCIBLE_KERNEL_CACHE")  # fmt: skip
    for path in [*(ROOT / "verifiers").rglob("*.py"), *(ROOT / "ray_actors").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not [n for n in names if n in text], path


def test_the_kernel_verifiers_take_device_workers_cache_and_baseline_from_settings(tmp_path):
    from verifiers.catalog import load_task
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    v = TritonVerifier(settings={"device": "cpu", "workers": 1, "cache_dir": str(tmp_path)})
    assert (v.device, v._workers, v.cache_dir, v.compile_baseline) == ("cpu", 1, tmp_path, False)
    assert CudaVerifier(device="cpu", cache_dir=tmp_path).settings == KernelSettings(
        device="cpu", cache_dir=str(tmp_path)
    )  # a Path given by name is taken as its str
    assert CudaVerifier(compile_baseline=True).compile_baseline
    task = load_task(ROOT / "tasks" / "triton" / "relu")
    rec = v.verify(task, "").metrics["settings"]  # format_error: no runner starts
    assert rec == {"device": "cpu", "workers": 1, "cache_dir": str(tmp_path)}
