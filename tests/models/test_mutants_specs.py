"""gpulab.specs refuses data-file names that leave gpulab/data, with the right message.

Written to kill mutants of ``read_data_text``'s path check that the other tests let live: an
empty path segment or a hidden name must be refused as a bad name, not looked up.
"""
from __future__ import annotations

import re

import pytest

from gpulab import specs


@pytest.mark.parametrize("name", ["measurements//x.csv", ".hidden", "topologies/.x",
                                  "../pyproject.toml", "a/./gpus.csv", ""])
def test_names_outside_the_data_folder_are_refused_as_names(name):
    want = f"name must be a file name inside gpulab/data; got {name!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
        specs.read_data_text(name)


def test_a_missing_file_is_reported_as_missing():
    with pytest.raises(ValueError, match=r"^name must be a file inside gpulab/data; "
                                         r"'no_such\.csv' not found$"):
        specs.read_data_text("no_such.csv")
    assert specs.read_data_text("pcie.csv").startswith("generation,")
