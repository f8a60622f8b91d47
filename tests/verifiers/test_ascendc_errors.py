"""bisheng's diagnostics -> taxonomy codes. The log lines are written for these tests in
clang's diagnostic format (`file:line:col: error: message`, then `note:` lines), which
bisheng, being clang-based, prints; the message texts are clang's (DiagnosticSemaKinds.td:
err_ovl_no_viable_function_in_call, err_typecheck_call_too_many_args, err_no_member,
err_no_template, err_undeclared_var_use, err_redefinition, err_init_conversion_failed,
err_typecheck_invalid_operands, err_bad_cxx_cast_generic, err_ovl_deleted_special_init)."""

from __future__ import annotations

import pytest

from verifiers.ascendc import api, errors

K = "op_kernel/scale.cpp"
HEADERS = "/usr/local/Ascend/ascend-toolkit/latest/compiler/tikcpp/tikcfw"


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("no matching function for call to 'DataCopy'", "api_signature"),
        ("no matching member function for call to 'EnQue'", "api_signature"),
        ("too many arguments to function call, expected 4, have 5", "api_signature"),
        ("too few arguments to function call, expected 4, have 3", "api_signature"),
        ("no member named 'VecAdd' in namespace 'AscendC'", "api_signature"),
        ("no template named 'TQueue'; did you mean 'TQue'?", "api_signature"),
        ("use of undeclared identifier 'xLocal'", "scope_lifetime"),
        ("use of undeclared identifier 'tileLen'; did you mean 'tileLength'?", "scope_lifetime"),
        ("redefinition of 'yLocal'", "scope_lifetime"),
        ("unknown type name 'LocalTensorF'", "scope_lifetime"),
        ("no member named 'Get' in 'AscendC::TQue<AscendC::TPosition::VECIN, 2>'", "memory_object"),
        ("call to implicitly-deleted copy constructor of 'AscendC::TPipe'", "memory_object"),
        (
            "cannot initialize a variable of type 'LocalTensor<half>' with an rvalue of type "
            "'LocalTensor<float>'",
            "memory_object",
        ),
        (
            "cannot initialize a variable of type 'half' with an lvalue of type 'float *'",
            "type_cast",
        ),
        ("invalid operands to binary expression ('__gm__ uint8_t *' and 'float')", "type_cast"),
        ("static_cast from 'float *' to 'half' is not allowed", "type_cast"),
        ("no viable conversion from 'int' to 'AscendC::RoundMode'", "type_cast"),
        ("expected ';' after expression", "compile_error"),
    ],
)
def test_messages_map_to_the_papers_classes(message, code):
    assert errors.code_of(message) == code


def test_the_first_error_with_the_candidates_line_and_the_apis_declaration():
    src = "\n".join(["// scale"] * 41 + ["        DataCopy(a, xGm[i * tile]);"]) + "\n"
    log = (
        "In file included from op_kernel/scale.cpp:1:\n"
        f"/tmp/w/{K}:42:9: error: no matching function for call to 'DataCopy'\n"
        "        DataCopy(a, xGm[i * tile]);\n"
        "        ^~~~~~~~\n"
        f"{HEADERS}/interface/kernel_operator_data_copy_intf.h:40:24: note: candidate function "
        "template not viable: requires 3 arguments, but 2 were provided\n"
        f"/tmp/w/{K}:50:5: error: use of undeclared identifier 'b'\n"
    )
    e = errors.classify(log, {K: src})
    assert (e.code, e.file, e.line) == ("api_signature", K, 42)
    assert e.first.startswith(f"{K}:42:9: error: no matching function for call to 'DataCopy'")
    assert "DataCopy(a, xGm[i * tile]);" in e.source_line
    assert "const GlobalTensor<T>& srcGlobal, const uint32_t calCount" in e.declaration
    fb = e.feedback()
    assert "42 | DataCopy" in fb and "the API is declared" in fb


def test_an_error_inside_a_cann_header_points_at_the_candidates_instantiating_line():
    src = "\n".join(["x"] * 29 + ["    Muls(t, a, 2.0, tile);"]) + "\n"
    log = (
        f"{HEADERS}/impl/kernel_operator_vec_binary_scalar_impl.h:88:5: error: no matching "
        "function for call to 'MulsImpl'\n"
        f"{HEADERS}/interface/kernel_operator_vec_binary_scalar_intf.h:30:5: note: in "
        "instantiation of function template specialization 'AscendC::Muls<float, true>' "
        "requested here\n"
        f"{K}:30:5: note: in instantiation of function template specialization "
        "'AscendC::Muls<float, double>' requested here\n"
    )
    e = errors.classify(log, {K: src})
    assert (e.code, e.file, e.line) == ("api_signature", K, 30)
    assert "Muls(t, a, 2.0, tile);" in e.source_line
    assert "const T& scalarValue" in e.declaration


def test_a_log_with_no_diagnostic_is_a_compile_error_with_its_first_line():
    e = errors.classify("bisheng: error: unable to execute command: Killed\n", {K: ""})
    assert e.code == "compile_error" and "unable to execute" in e.first and e.line is None


def test_api_lookup_by_quoted_name_member_and_closest_for_a_hallucinated_one():
    assert api.find("no matching member function for call to 'EnQue'").name == "TQue::EnQue"
    assert api.find("no member named 'ReduceSumm' in namespace 'AscendC'").name == "ReduceSum"
    assert api.find("expected ';'", "    PipeBarrier<PIPE_V>()").name == "PipeBarrier"
    assert api.find("expected ';'", "int x = 1") is None
    for name in ("DataCopy", "Add", "Exp", "Muls", "ReduceMax", "Duplicate", "Cast", "SetFlag",
                 "WaitFlag", "TPipe::InitBuffer", "TQue::AllocTensor", "TQue::DeQue",
                 "TQue::FreeTensor", "GlobalTensor::SetGlobalBuffer", "GetBlockIdx",
                 "GetBlockNum", "GET_TILING_DATA"):  # fmt: skip
        assert api.APIS[name].decls
