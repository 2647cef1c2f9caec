"""Hypothesis strategies for the gpulab tests, and the "ci" profile.

Import this module from every property-test module (``from strategies import ...``):
importing it registers and loads the profile, so every run is bounded and
reproducible (derandomized, no example database, no deadline on a slow CI box).
"""
from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")

DIRECTIONS = ("per_direction", "bidirectional")


def _floats(lo, hi):
    return st.floats(min_value=lo, max_value=hi, allow_nan=False,
                     allow_infinity=False)


#: Byte counts from one byte to 1 PB. [B]
sizes = _floats(1.0, 1e15)
#: Non-negative byte counts, zero included. [B]
sizes0 = st.one_of(st.just(0.0), sizes)
#: Message sizes typical of collectives, 1 KiB to 64 GiB. [B]
message_sizes = _floats(2.0**10, 2.0**36)
#: Latencies from 10 ns to 1 ms. [s]
latencies = _floats(1e-8, 1e-3)
#: Latencies, zero included. [s]
latencies0 = st.one_of(st.just(0.0), latencies)
#: Per-direction rates from 1 MB/s to 10 TB/s. [B/s]
rates = _floats(1e6, 1e13)
#: Durations from 1 ns to 1 day. [s]
durations = _floats(1e-9, 86400.0)
#: Rates in GB/s. [GB/s]
gb_per_s = _floats(1e-3, 1e5)
#: Rates in Gb/s. [Gb/s]
gbit_per_s = _floats(1e-3, 1e6)
#: Symbol rates from 1 MBd to 500 GBd. [Bd]
symbol_rates = _floats(1e6, 5e11)
#: Bits per symbol accepted by links.lane_rate (NRZ 1, PAM4 2, ... up to 8).
bits_per_symbol = st.integers(min_value=1, max_value=8)
#: Lanes per direction of one link.
lanes = st.integers(min_value=1, max_value=64)
#: Coding efficiency in (0, 1].
coding_efficiencies = _floats(1e-3, 1.0)
#: Links per GPU.
n_links = st.integers(min_value=1, max_value=1024)
#: Ranks of a collective (>= 1) and >= 2.
n_ranks = st.integers(min_value=1, max_value=4096)
n_ranks2 = st.integers(min_value=2, max_value=4096)
#: Fractions in [0, 1] (overlap).
fractions01 = _floats(0.0, 1.0)
#: Fractions in (0, 1] (MFU, efficiencies).
fractions_open = _floats(1e-3, 1.0)
#: Model sizes from 1M to 10T parameters.
params = _floats(1e6, 1e13)
#: Tokens per GPU per step.
tokens = _floats(1.0, 1e7)
#: Direction words.
directions = st.sampled_from(DIRECTIONS)


@st.composite
def bandwidths(draw, direction=None):
    """A :class:`gpulab.units.Bandwidth` of the given (or any) direction."""
    from gpulab import units

    d = draw(directions) if direction is None else direction
    return units.Bandwidth(draw(rates), d)


def per_direction_bandwidths():
    return bandwidths("per_direction")


def gpu_names():
    from gpulab import specs

    return st.sampled_from(specs.gpu_names())


def nvlink_gpu_names():
    """GPUs with NVLink: those gpulab.scaling models."""
    from gpulab import scaling

    return st.sampled_from(scaling.gpu_names())
