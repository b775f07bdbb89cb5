"""The NumPy oracle every kernel is compared with (philox, sampling, quant, set_rows)."""
