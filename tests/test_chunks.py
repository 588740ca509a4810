"""Decodes kept in chunks on disk (issue 48: a long run stops and resumes): the merged result equals an
unchunked decode, a rerun reads every chunk back and decodes nothing, and another identity, sampler
setting or item set never reads a chunk that is not its own."""

from __future__ import annotations

import numpy as np
import pytest

from mdm_mi.core.samplers import EntropyBounded, NaiveTopK
from mdm_mi.evaluation.chunks import ChunkStore


def _counting(items: np.ndarray):
    """A decode_range over ``items (P,)`` that doubles them and counts its calls."""
    calls = []

    def decode_range(start, stop):
        calls.append((start, stop))
        return {"value": items[start:stop] * 2, "index": np.arange(start, stop)}

    return decode_range, calls


def test_chunks_merge_in_order_and_are_read_back(tmp_path):
    items = np.arange(23)
    store = ChunkStore(tmp_path / "c", "id", chunk_items=5)
    decode_range, calls = _counting(items)
    first = store.decode(items, NaiveTopK(2), decode_range)
    assert calls == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
    assert np.array_equal(first["value"], items * 2) and np.array_equal(first["index"], items)
    again = ChunkStore(tmp_path / "c", "id", chunk_items=5)
    second = again.decode(items, NaiveTopK(2), decode_range)
    assert len(calls) == 5 and (again.hits, again.misses) == (5, 0)
    assert all(np.array_equal(first[k], second[k]) for k in first)


def test_a_stopped_run_decodes_only_the_missing_chunks(tmp_path):
    items = np.arange(12)
    store = ChunkStore(tmp_path, "id", chunk_items=4)
    decode_range, calls = _counting(items)

    def stops_after_two(start, stop):
        if start >= 8:
            raise KeyboardInterrupt
        return decode_range(start, stop)

    with pytest.raises(KeyboardInterrupt):
        store.decode(items, NaiveTopK(2), stops_after_two)
    resumed = ChunkStore(tmp_path, "id", chunk_items=4)
    out = resumed.decode(items, NaiveTopK(2), decode_range)
    assert calls == [(0, 4), (4, 8), (8, 12)] and (resumed.hits, resumed.misses) == (2, 1)
    assert np.array_equal(out["value"], items * 2)


@pytest.mark.parametrize("change", ["identity", "sampler", "setting", "items"])
def test_nothing_is_read_across_identities_settings_or_items(tmp_path, change):
    items = np.arange(6)
    ChunkStore(tmp_path, "id", chunk_items=3).decode(items, NaiveTopK(2), _counting(items)[0])
    other = {"identity": ("id2", NaiveTopK(2), items), "sampler": ("id", EntropyBounded(0.5), items),
             "setting": ("id", NaiveTopK(3), items), "items": ("id", NaiveTopK(2), items + 1)}[change]
    store = ChunkStore(tmp_path, other[0], chunk_items=3)
    decode_range, calls = _counting(other[2])
    store.decode(other[2], other[1], decode_range)
    assert (store.hits, store.misses) == (0, 2) and len(calls) == 2


def test_parts_are_kept_apart_and_a_key_without_part_is_unchanged(tmp_path):
    """An infilling run keeps each fill (and its scores) of the same items and setting as a part of its
    own; the keys of a run without parts (Sudoku's chunk folders) are those written before parts existed."""
    store = ChunkStore(tmp_path, "id", chunk_items=3)
    assert store.key(np.arange(3), 0, 'naive {"k": 2}') == "1f14c53b2d3e02ac35f04b80ebbd9242"
    assert store.key(np.arange(6).reshape(2, 3), 5, 'eb {"gamma": 0.5}') == "e6415d2b895632280375b44c0ae8fed3"
    items = np.arange(6)
    for part in ("fill 0", "fill 1", "score fill 0", ""):
        store.decode(items, NaiveTopK(2), _counting(items)[0], part=part)
    assert (store.hits, store.misses) == (0, 8)
    store.decode(items, NaiveTopK(2), _counting(items)[0], part="fill 1")
    assert (store.hits, store.misses) == (2, 8)


def test_chunks_record_the_commit_that_wrote_them(tmp_path):
    store = ChunkStore(tmp_path, "id", chunk_items=2, commit="abc123")
    store.decode(np.arange(4), NaiveTopK(1), _counting(np.arange(4))[0])
    assert store.commits() == ["abc123"]


def test_chunks_keep_their_decode_time_and_the_record_sums_it_over_invocations(tmp_path):
    """A run spread over invocations states its whole cost: each chunk keeps its decode's wall and CPU
    seconds, the record sums every chunk in the folder (a rerun that reads them back too), and the
    outcome read back holds only the decode's arrays."""
    import time

    def slow_range(start, stop):
        busy = time.process_time() + 0.02
        while time.process_time() < busy:
            pass
        return {"x": np.arange(start, stop)}

    first = ChunkStore(tmp_path, "id", chunk_items=2)
    out = first.decode(np.arange(4), NaiveTopK(1), slow_range)
    record = first.record()
    assert record["decoded"] == 2 and record["decode_cpu_seconds"] >= 0.04 and record["decode_seconds"] >= 0.04
    again = ChunkStore(tmp_path, "id", chunk_items=2)
    back = again.decode(np.arange(4), NaiveTopK(1), slow_range)
    assert set(back) == {"x"} and np.array_equal(back["x"], out["x"])
    assert (again.record() | {"read": 0, "decoded": 2}) == record and again.record()["read"] == 2


def test_sudoku_decoder_with_chunks_equals_one_decode(tmp_path, tiny_model, easy_puzzles):
    """Chunks of 3 puzzles, batches of 2: the same solved and passes as one decode of the whole set."""
    from mdm_mi.sudoku.compare import Decoder
    from mdm_mi.sudoku.data import PuzzleSet

    puzzles, solutions = easy_puzzles
    ps = PuzzleSet(puzzles[:8], solutions[:8], ["easy"] * 8)
    for sampler in (NaiveTopK(3), EntropyBounded(0.5)):
        whole = Decoder(tiny_model, None, 8, 0)(ps, sampler)
        chunked = Decoder(tiny_model, None, 2, 0, store=ChunkStore(tmp_path, "tiny", chunk_items=3))(ps, sampler)
        assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))


def test_weights_identity_keeps_the_sudoku_comparisons_keys(tmp_path, tiny_checkpoint):
    """sudoku-compare's identity, now built by loading.weights_identity, is the string its chunk folders
    were keyed by before (model and head fingerprints, device type), so they are still read back."""
    import json

    from mdm_mi.infra.checkpoint import read_meta
    from mdm_mi.models.loading import compute_fingerprint, model_fingerprint, weights_identity
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tmp_path / "head", {})
    before = json.dumps({"model": model_fingerprint(tiny_checkpoint),
                         "heads": [compute_fingerprint(tmp_path / "head", read_meta(tmp_path / "head"))],
                         "device": "cuda"})
    assert weights_identity(tiny_checkpoint, (tmp_path / "head", None), "cuda:0") == before
    assert json.loads(weights_identity(tiny_checkpoint, (), "cpu", seed=3))["seed"] == 3
