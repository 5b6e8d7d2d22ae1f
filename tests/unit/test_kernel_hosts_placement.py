"""Placement (actors/daemon/kernel/placement.py) as a table: the hosts, what is known of
them and the notebook's wish give the host of a new kernel, or why there is none."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.kernel.host_health import Breaker, HostHealth, host_facts
from nbstage.actors.daemon.kernel.placement import (
    HostFacts,
    Placed,
    Unplaceable,
    place_kernel,
    refuse_inline_dependencies,
    wished_host,
    with_wished_host,
)
from nbstage.protocol.common.kernel_hosts import KernelHost

A = KernelHost("a", "http://a:1", "t", max_kernels=2)
B = KernelHost("b", "http://b:1", "t")
C = KernelHost("c", "http://c:1", "t", max_kernels=1)
HOSTS = (A, B, C)
LOST = HostFacts(healthy=False)


@pytest.mark.parametrize(
    ("hosts", "facts", "wish", "expected"),
    [
        pytest.param((), {}, None, Placed(None), id="no hosts, no wish: local"),
        pytest.param(HOSTS, {}, None, Placed(None), id="hosts but no wish: still local"),
        pytest.param(HOSTS, {}, "a", Placed(A), id="the wished host, unchecked yet"),
        pytest.param(HOSTS, {"a": HostFacts(kernels=1)}, "a", Placed(A), id="below its limit"),
        pytest.param(HOSTS, {"b": HostFacts(kernels=500)}, "b", Placed(B), id="no limit"),
        pytest.param(
            HOSTS,
            {"a": LOST, "b": HostFacts(kernels=3)},
            "a",
            Placed(C, "kernel host 'a' is lost: the kernel runs on 'c'"),
            id="wished host lost: the one with fewest kernels",
        ),
        pytest.param(
            HOSTS,
            {"a": HostFacts(kernels=2), "c": HostFacts(kernels=1)},
            "a",
            Placed(B, "kernel host 'a' is full: the kernel runs on 'b'"),
            id="wished host full, another full too",
        ),
        pytest.param(
            HOSTS,
            {"c": LOST},
            "c",
            Placed(A, "kernel host 'c' is lost: the kernel runs on 'a'"),
            id="a tie goes to the first in the settings",
        ),
        pytest.param(
            HOSTS,
            {"a": LOST, "b": LOST, "c": HostFacts(kernels=1)},
            "a",
            Unplaceable("kernel host 'a' is lost, and no other host has room"),
            id="nowhere to go",
        ),
        pytest.param(
            HOSTS,
            {},
            "z",
            Unplaceable(
                "the notebook asks for kernel host 'z', which config.toml does not name "
                "(it names: 'a', 'b', 'c')"
            ),
            id="an unknown host",
        ),
        pytest.param(
            (),
            {},
            "a",
            Unplaceable(
                "the notebook asks for kernel host 'a', which config.toml does not name "
                "(it names: none)"
            ),
            id="a wish with no hosts at all",
        ),
    ],
)
def test_placement(hosts, facts, wish, expected) -> None:
    assert place_kernel(hosts, facts, wish) == expected


OPEN = HostHealth(Breaker.OPEN, failures=2, opened_at=1.0, last_error="refused")
CHECKING = HostHealth(Breaker.HALF_OPEN, failures=2, opened_at=1.0)


@pytest.mark.parametrize(
    ("health", "kernels", "wish", "expected"),
    [
        pytest.param({}, {"a": 1}, "a", Placed(A), id="counted, below max_kernels"),
        pytest.param(
            {},
            {"a": 2},
            "a",
            Placed(B, "kernel host 'a' is full: the kernel runs on 'b'"),
            id="counted at max_kernels: full",
        ),
        pytest.param(
            {"a": OPEN},
            {},
            "a",
            Placed(B, "kernel host 'a' is lost: the kernel runs on 'b'"),
            id="breaker open: lost, skipped",
        ),
        pytest.param(
            {"a": CHECKING, "b": OPEN},
            {},
            "a",
            Placed(C, "kernel host 'a' is lost: the kernel runs on 'c'"),
            id="half-open is not healthy yet",
        ),
        pytest.param(
            {"a": OPEN, "b": OPEN},
            {"c": 1},
            "b",
            Unplaceable("kernel host 'b' is lost, and no other host has room"),
            id="the only healthy host is full",
        ),
        pytest.param({"a": HostHealth()}, {"a": 0}, "a", Placed(A), id="closed and empty"),
    ],
)
def test_placement_fed_by_health_and_counts(health, kernels, wish, expected) -> None:
    assert place_kernel(HOSTS, host_facts(health, kernels), wish) == expected


@pytest.mark.parametrize(
    ("metadata", "wish"),
    [
        pytest.param({}, None, id="nothing"),
        pytest.param({"nbstage": {"kernel_host": "a"}}, "a", id="a name"),
        pytest.param({"nbstage": {"kernel_host": ""}}, None, id="empty"),
        pytest.param({"nbstage": {"kernel_host": 3}}, None, id="not a string"),
        pytest.param({"nbstage": "a"}, None, id="not a table"),
        pytest.param([], None, id="no metadata dict"),
    ],
)
def test_the_wish_read_from_metadata(metadata, wish) -> None:
    assert wished_host(metadata) == wish


def test_the_wish_is_written_beside_the_rest_and_taken_away_cleanly() -> None:
    given = {"kernelspec": {"name": "python3"}, "nbstage": {"other": 1}}
    asked = with_wished_host(given, "a")
    assert asked == {"kernelspec": {"name": "python3"}, "nbstage": {"other": 1, "kernel_host": "a"}}
    assert given == {"kernelspec": {"name": "python3"}, "nbstage": {"other": 1}}
    assert with_wished_host(asked, None) == given
    assert with_wished_host({"nbstage": {"kernel_host": "a"}}, None) == {}


@pytest.mark.parametrize(
    ("host", "requirements", "refused"),
    [
        pytest.param(None, ("six",), False, id="local: the daemon builds them"),
        pytest.param(A, (), False, id="a host, no inline dependencies"),
        pytest.param(A, ("six", "numpy>=2"), True, id="a host cannot use them"),
    ],
)
def test_inline_dependencies_on_a_host_are_refused(host, requirements, refused) -> None:
    reason = refuse_inline_dependencies(host, requirements)
    assert (reason is not None) == refused
    if refused:
        assert "kernel host 'a'" in reason
        assert "six, numpy>=2" in reason
        assert "manage_dependencies(remove=" in reason
