import pytest
import torch

from transformer.core.devices import available_devices, device_unavailable_reason, resolve_device


def test_auto_picks_the_first_available():
    assert resolve_device("auto").type == available_devices()[0]
    assert available_devices()[-1] == "cpu"


def test_missing_device_names_the_available_ones():
    if torch.cuda.is_available():
        pytest.skip("CUDA is present here")
    with pytest.raises(ValueError, match="Available devices: .*cpu"):
        resolve_device("cuda")
    assert "CUDA" in device_unavailable_reason("cuda")
    assert device_unavailable_reason("cpu") is None
