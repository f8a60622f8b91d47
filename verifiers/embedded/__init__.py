"""Embedded firmware for the STM32F407 (Cortex-M4F), cross-compiled and booted in QEMU."""
