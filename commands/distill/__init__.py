"""Distillation (seed 1.2, 3.1): raw episodes (L0) into clean memories (L1), every decision an event."""
