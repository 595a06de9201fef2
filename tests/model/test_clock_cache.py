"""The shared bounded cache (model/clock_cache.py): which entries second-chance eviction keeps,
maxsize 0, replacement, clear, and threads filling and reading one map at once. Every
expected set below is traced by hand from the rule in clock_cache.py's docstring."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest
from profstore.model.clock_cache import ClockCache


def kept(cache: ClockCache, keys: str) -> str:
    """The keys among ``keys`` still cached (read through ``get``, which marks them)."""
    return "".join(k for k in keys if cache.get(k) is not None)


def filled(maxsize: int, keys: str) -> ClockCache:
    cache = ClockCache(maxsize)
    for k in keys:
        cache.put(k, k.upper())
    return cache


def test_without_reads_the_oldest_goes_first() -> None:
    cache = filled(3, "abcd")
    assert len(cache) == 3
    assert kept(cache, "abcd") == "bcd"


def test_a_read_entry_survives_the_next_eviction() -> None:
    cache = filled(3, "abc")
    assert cache.get("a") == "A"
    cache.put("d", "D")  # "a" read: moved to the newest end unmarked; "b" evicted
    cache.put("e", "E")  # now "c" is the oldest unread entry
    assert len(cache) == 3
    assert kept(cache, "abcde") == "ade"


def test_read_once_outlives_a_later_unread_insert() -> None:
    """Where second chance differs from a strict ClockCache: "a" was read before "b" and "c"
    were inserted, so a strict ClockCache would evict "a"; the sweep evicts "b"."""
    cache = filled(3, "a")
    assert cache.get("a") == "A"
    for k in "bcd":
        cache.put(k, k.upper())
    assert kept(cache, "abcd") == "acd"


def test_when_every_entry_was_read_the_sweep_evicts_in_insertion_order() -> None:
    cache = filled(2, "ab")
    assert (cache.get("b"), cache.get("a")) == ("B", "A")
    cache.put("c", "C")  # both unmarked and moved ("a" then "b"), then "a" is evicted,
    # though a strict ClockCache would keep "a" (read last)
    assert kept(cache, "abc") == "bc"


def test_the_entry_just_put_is_never_the_one_evicted() -> None:
    cache = filled(1, "a")
    assert cache.get("a") == "A"
    cache.put("b", "B")
    assert kept(cache, "ab") == "b"


def test_put_of_a_cached_key_replaces_it_as_the_newest() -> None:
    cache = filled(2, "ab")
    cache.put("a", "A2")
    assert len(cache) == 2
    cache.put("c", "C")  # "a" was put after "b": "b" is the oldest
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("A2", None, "C")


def test_maxsize_zero_keeps_nothing() -> None:
    cache = filled(0, "ab")
    assert len(cache) == 0
    assert cache.get("a") is None


def test_negative_maxsize_is_refused() -> None:
    with pytest.raises(ValueError, match="maxsize must not be negative"):
        ClockCache(-1)


def test_clear_forgets_everything_and_the_cache_fills_again() -> None:
    cache = filled(3, "abc")
    cache.clear()
    assert len(cache) == 0 and kept(cache, "abc") == ""
    cache.put("d", "D")
    assert kept(cache, "abcd") == "d" and cache.maxsize == 3


class SlowKey:
    """A key whose equality is Python code, so a thread switch can fall inside a lookup
    (as with the leaf descriptors that key the answer cache)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        return self.n % 7  # few buckets: lookups compare many keys

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlowKey) and other.n == self.n


@pytest.fixture
def frequent_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_threads_sharing_one_cache_read_only_what_was_put(frequent_switches: None) -> None:
    """Four writers put keys 0-399 (value 10 n), four readers get keys at once: every hit
    is the value put for its key, the size never exceeds 16, and since far more than 16
    distinct keys were put and nothing but eviction removes one, exactly 16 stay."""
    cache = ClockCache(16)
    start = threading.Barrier(9)
    wrong: list[tuple[int, object]] = []
    oversize: list[int] = []
    raised: list[BaseException] = []

    def write(first: int) -> None:
        start.wait()
        for n in range(first, 400, 4):
            cache.put(SlowKey(n), 10 * n)

    def read(first: int) -> None:
        start.wait()
        for _ in range(5):
            for n in range(first, 400, 4):
                value = cache.get(SlowKey(n))
                if value is not None and value != 10 * n:
                    wrong.append((n, value))
                if len(cache) > 16:
                    oversize.append(len(cache))

    def guarded(work: Callable[[int], None]) -> Callable[[int], None]:
        def run(first: int) -> None:
            try:
                work(first)
            except BaseException as exc:  # a thread's error would only be a warning
                raised.append(exc)
        return run

    threads = [threading.Thread(target=guarded(write), args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=guarded(read), args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    start.wait()
    for t in threads:
        t.join()
    assert raised == [] and wrong == [] and oversize == []
    assert len(cache) == 16
    survivors = [n for n in range(400) if cache.get(SlowKey(n)) is not None]
    assert len(survivors) == 16
    assert all(cache.get(SlowKey(n)) == 10 * n for n in survivors)
