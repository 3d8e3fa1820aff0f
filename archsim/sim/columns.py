"""A problem's ops and dependencies as columns, and the rules of :class:`~archsim.sim.problem.Problem`
checked over them.

Policies that build 10⁵–10⁶ ops hand the simulator :class:`OpColumns` and :class:`DepColumns`
(integer indices into the problem's processors, ops and links) through ``Problem.from_arrays``;
``Problem(processors, links, ops, deps)`` turns its Op and Dep objects into the same columns
(:func:`object_columns`). Either way :func:`check_columns` applies every rule as array operations
and, on a mistake, names the first offending op (then dependency) and the first rule it breaks, in
the order and words of the per-op rules: duplicate id, unknown processor, duration, pinned stream,
negative bytes; unknown op, negative, NaN or infinite bytes, unknown link, link direction; then cycles.

Times are in the problem's unit, bytes are bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from archsim.errors import InputError
from archsim.read_only import read_only_array
from archsim.sim.arrays import ProblemArrays, acyclic, out_edges

# One value per op: a list or tuple, or a numpy array (what the column builders hand over).
Column = Sequence[Any] | np.ndarray


class FormattedIds(Sequence):
    """Op ids made on demand, ``ids[i] = pattern.format(*(c[i] for c in columns))``, for problems of
    10⁶ ops whose ids are read only for reports: ``key[i]`` is an integer with equal keys exactly
    for equal ids (the caller's promise), so uniqueness is checked on the keys, not on 10⁶ strings."""

    def __init__(self, pattern: str, columns: Sequence[Column], key: np.ndarray) -> None:
        frozen = tuple(read_only_array(c) if isinstance(c, np.ndarray) else tuple(c) for c in columns)
        self.pattern, self.columns, self.key = pattern, frozen, read_only_array(key)  # views: the caller's stay theirs

    def __reduce__(self) -> tuple:
        """Copied and pickled through the constructor: the columns read-only again."""
        return FormattedIds, (self.pattern, self.columns, self.key)

    def __len__(self) -> int:
        return len(self.key)

    def __getitem__(self, item):
        if isinstance(item, slice):
            return [self.pattern.format(*(c[i] for c in self.columns)) for i in range(*item.indices(len(self)))]
        return self.pattern.format(*(c[item] for c in self.columns))

    def __iter__(self):
        return map(self.pattern.format, *(c.tolist() if isinstance(c, np.ndarray) else c for c in self.columns))


def _has_duplicates(ids: Sequence[str], n: int) -> bool:
    if isinstance(ids, FormattedIds):
        return distinct(ids.key) != n
    return len(set(ids)) != n


def distinct(key: np.ndarray) -> int:
    """How many different integers ``key`` holds: one mark per value when they span a range of a
    few times their number (the schedules' keys, no sort), ``np.unique`` otherwise."""
    if key.size and key.dtype.kind in "iu":
        low, high = int(key.min()), int(key.max())
        if high - low < 8 * key.size + 4096:
            seen = np.zeros(high - low + 1, dtype=bool)
            seen[key - low] = True
            return int(np.count_nonzero(seen))
    return len(np.unique(key))


@dataclass(frozen=True, eq=False)
class OpColumns:
    """Op i is ``ids[i]`` on processor ``proc[i]`` (an index into the problem's processors) for
    ``duration[i]``; ``pin[i]`` its stream (-1: any), ``alloc[i]`` / ``free[i]`` its bytes (None:
    all 0); ``priority`` one key per op (None: every op 0, so ops run in problem order; an integer
    array of one row per op: the row as a tuple, compared lexicographically); ``tags``:
    (key, column) pairs, ``column[i]`` op i's value (None: op i has no such tag)."""

    ids: Sequence[str]
    proc: np.ndarray
    duration: np.ndarray
    pin: np.ndarray | None = None
    alloc: np.ndarray | None = None
    free: np.ndarray | None = None
    priority: Column | None = None
    tags: tuple[tuple[str, Column], ...] = ()


@dataclass(frozen=True, eq=False)
class DepColumns:
    """Dependency d: op ``dst[d]`` waits for op ``src[d]`` (indices into the ops); with ``link[d]``
    >= 0 (an index into the problem's links) ``bytes[d]`` cross that link in between."""

    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray | None = None
    link: np.ndarray | None = None


def _numbers(values, kinds: str = "iuf") -> np.ndarray | None:
    """int64 when every value is an integer, float64 when some are floats; None otherwise."""
    try:
        array = np.asarray(values) if len(values) else np.zeros(0, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None
    if array.ndim != 1 or array.dtype.kind not in kinds:
        return None
    return array.astype(np.int64 if array.dtype.kind in "iu" else np.float64, copy=False)


_UNKNOWN_LINK = -2  # a dependency naming a link the problem lacks (-1: no link)


def object_columns(processors, links, ops, deps) -> tuple[OpColumns, DepColumns]:
    """The columns of Op and Dep objects: unknown names become -1 (-2 for a link), so that
    :func:`check_columns` reports them; a field that is not a number is reported here."""
    proc_index = {p.name: i for i, p in enumerate(processors)}
    link_index = {link.name: i for i, link in enumerate(links)}
    ids = [op.id for op in ops]
    index = dict(zip(ids, range(len(ids))))
    proc = np.array([proc_index.get(op.processor, -1) for op in ops], dtype=np.int64)
    try:  # None: any stream (-1); a negative pin becomes -2, which the checks reject
        pins = [-1 if op.stream is None else -2 if op.stream < 0 else op.stream for op in ops]
    except TypeError:
        pins = None
    columns = {"duration": [op.duration for op in ops], "stream": pins,
               "alloc_bytes": [op.alloc_bytes for op in ops], "free_bytes": [op.free_bytes for op in ops]}
    arrays: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        kinds = "iu" if name == "stream" else "iuf"
        found = None if values is None else _numbers(values, kinds)
        if found is None:
            _checked([getattr(op, name) for op in ops], ops, name, kinds, name == "stream")
        arrays[name] = found
    sizes = _numbers([dep.bytes for dep in deps])
    if sizes is None:
        _checked([dep.bytes for dep in deps], deps, "bytes", "iuf", False)
    op_columns = OpColumns(ids, proc, arrays["duration"].astype(np.float64), arrays["stream"], arrays["alloc_bytes"],
                           arrays["free_bytes"])
    dep_columns = DepColumns(np.array([index.get(dep.src, -1) for dep in deps], dtype=np.int64),
                             np.array([index.get(dep.dst, -1) for dep in deps], dtype=np.int64), sizes,
                             np.array([-1 if dep.link is None else link_index.get(dep.link, _UNKNOWN_LINK)
                                       for dep in deps], dtype=np.int64))
    return op_columns, dep_columns


def _checked(values: list, items, field: str, kinds: str, optional: bool) -> NoReturn:
    """Raise an InputError naming the first item whose value is not a number of ``kinds`` (None
    allowed when optional)."""
    allowed = (int, np.integer) if kinds == "iu" else (int, float, np.integer, np.floating)
    for item, value in zip(items, values):
        if (value is None and optional) or (isinstance(value, allowed) and not isinstance(value, bool)):
            continue
        name = f"op {item.id!r}" if hasattr(item, "id") else f"dependency {item.src!r} -> {item.dst!r}"
        raise InputError(f"{name}: {field} must be a number, got {value!r}", field=field)
    raise InputError(f"{field}: numbers out of range", field=field)


def check_columns(processors, links, ops: OpColumns, deps: DepColumns, named=None) -> ProblemArrays:
    """The engine's arrays of checked processors and links and these columns, or an InputError
    naming the first mistake. ``named``: the (ops, deps) objects the columns came from, whose own
    field values the messages quote."""
    n = len(ops.ids)
    streams = np.array([p.streams for p in processors], dtype=np.int64)
    proc = np.asarray(ops.proc, dtype=np.int64)
    duration = np.asarray(ops.duration, dtype=np.float64)
    pin = _column(ops.pin, n, -1)
    alloc, free = _column(ops.alloc, n, 0), _column(ops.free, n, 0)
    lengths = [len(proc), len(duration), len(pin), len(alloc), len(free)]
    lengths += [len(ops.priority)] if ops.priority is not None else []
    lengths += [len(column) for _, column in ops.tags]
    if any(length != n for length in lengths):
        raise InputError(f"op columns differ in length from the {n} op ids", field="ops")
    if isinstance(ops.priority, np.ndarray) and ops.priority.dtype.kind not in "iu":
        raise InputError("priority arrays must hold integers (other keys: a sequence)", field="priority")
    known = (proc >= 0) & (proc < len(processors))
    lanes = np.where(known, streams[np.where(known, proc, 0)] if len(processors) else 0, 0)
    rules = [~known, ~(np.isfinite(duration) & (duration >= 0)), (pin < -1) | (pin >= lanes), (alloc < 0) | (free < 0)]
    if _has_duplicates(ops.ids, n) or any(rule.any() for rule in rules):
        _raise_op_error(processors, ops, proc, duration, pin, rules, named)
    src = np.asarray(deps.src, dtype=np.int64)
    dst = np.asarray(deps.dst, dtype=np.int64)
    m = len(src)
    size = _column(deps.bytes, m, 0)
    link = _column(deps.link, m, -1)
    if len(dst) != m or len(size) != m or len(link) != m:
        raise InputError(f"dependency columns differ in length from the {m} sources", field="deps")
    position = {p.name: i for i, p in enumerate(processors)}
    link_src = np.array([position[x.src] for x in links] + [0], dtype=np.int64)
    link_dst = np.array([position[x.dst] for x in links] + [0], dtype=np.int64)
    has_src, has_dst = (src >= 0) & (src < n), (dst >= 0) & (dst < n)
    known_link = (link >= -1) & (link < len(links))
    linked = np.flatnonzero(known_link & (link >= 0) & has_src & has_dst)  # only these cross a link
    lk = link[linked]
    wrong_way = np.zeros(m, dtype=bool)
    wrong_way[linked] = (link_src[lk] != proc[src[linked]]) | (link_dst[lk] != proc[dst[linked]])
    # NaN and infinite bytes too: no transfer moves them, and ∞ bytes over an ∞-bandwidth link would time as NaN
    dep_rules = [~has_src, ~has_dst, ~((size >= 0) & np.isfinite(size)), ~known_link, wrong_way]
    if any(rule.any() for rule in dep_rules):
        _raise_dep_error(processors, links, ops, src, dst, link, size, dep_rules, named)
    latency = np.array([x.latency for x in links] + [0.0], dtype=np.float64)
    bandwidth = np.array([x.bandwidth for x in links] + [1.0], dtype=np.float64)
    # Link.transfer_time, latency + bytes / bandwidth, in the same float arithmetic (0 without a link)
    dep_time = np.zeros(m, dtype=np.float64)
    dep_time[linked] = latency[lk] + size[linked] / bandwidth[lk]
    edges = out_edges(n, src)
    arrays = ProblemArrays(ops.ids, proc, duration, pin, alloc, free, streams, src, dst, link, size,
                           dep_time, acyclic(n, src, dst, edges), edges)
    if not arrays.acyclic:
        _raise_cycle(arrays)
    return arrays


def _column(values, n: int, default: int) -> np.ndarray:
    if values is None:
        return np.full(n, default, dtype=np.int64)
    array = np.asarray(values)
    return array if array.dtype.kind == "f" else array.astype(np.int64, copy=False)


def _raise_op_error(processors, ops: OpColumns, proc, duration, pin, rules, named) -> None:
    """The first op breaking a rule, and the first rule it breaks, as the per-op checks word it."""
    first: dict = {}
    duplicate = np.array([first.setdefault(op_id, i) != i for i, op_id in enumerate(ops.ids)], dtype=bool)
    bad = np.flatnonzero(duplicate | np.logical_or.reduce(rules))
    i = int(bad[0])
    op_id = ops.ids[i]
    objects = named[0] if named is not None else None
    if duplicate[i]:
        raise InputError(f"duplicate op id {op_id!r}", field="ops")
    if rules[0][i]:
        name = objects[i].processor if objects is not None else f"#{int(proc[i])}"
        raise InputError(f"op {op_id!r} on unknown processor {name!r}", field="processor")
    if rules[1][i]:
        value = objects[i].duration if objects is not None else float(duration[i])
        raise InputError(f"op {op_id!r} needs a finite duration >= 0, got {value!r}", field="duration")
    if rules[2][i]:
        stream = objects[i].stream if objects is not None else int(pin[i])
        processor = processors[int(proc[i])]
        raise InputError(f"op {op_id!r} pinned to stream {stream}, but {processor.name!r} has "
                         f"{processor.streams}", field="stream")
    raise InputError(f"op {op_id!r} allocates or frees a negative number of bytes", field="alloc_bytes")


def _raise_dep_error(processors, links, ops: OpColumns, src, dst, link, size, rules, named) -> None:
    """The first dependency breaking a rule, and the first rule it breaks, as the per-dependency checks word it."""
    d = int(np.flatnonzero(np.logical_or.reduce(rules))[0])
    objects = named[1] if named is not None else None

    def op_name(position: int) -> str:
        return ops.ids[position] if 0 <= position < len(ops.ids) else f"#{position}"

    a = objects[d].src if objects is not None else op_name(int(src[d]))
    b = objects[d].dst if objects is not None else op_name(int(dst[d]))
    if rules[0][d] or rules[1][d]:
        raise InputError(f"dependency {a!r} -> {b!r} names unknown op {a if rules[0][d] else b!r}", field="deps")
    if rules[2][d]:
        what = "negative" if size[d] < 0 else "infinite" if np.isinf(size[d]) else "NaN"
        raise InputError(f"dependency {a!r} -> {b!r} moves {what} bytes", field="bytes")
    if rules[3][d]:
        name = objects[d].link if objects is not None else f"#{int(link[d])}"
        raise InputError(f"dependency {a!r} -> {b!r} uses unknown link {name!r}", field="link")
    channel = links[int(link[d])]
    ends = (processors[int(ops.proc[int(src[d])])].name, processors[int(ops.proc[int(dst[d])])].name)
    raise InputError(f"link {channel.name!r} runs {channel.src!r} -> {channel.dst!r}, but dependency "
                     f"{a!r} -> {b!r} runs {ends[0]!r} -> {ends[1]!r}", field="link")


def _raise_cycle(arrays: ProblemArrays) -> None:
    """Name one cycle, as networkx finds it (only on this error path; the check itself is Kahn's)."""
    import networkx as nx

    ids = list(arrays.ids)
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((ids[a], ids[b]) for a, b in zip(arrays.dep_src.tolist(), arrays.dep_dst.tolist()))
    cycle = " -> ".join(u for u, _ in nx.find_cycle(graph))
    raise InputError(f"dependencies contain a cycle: {cycle}", field="deps")


__all__ = ["DepColumns", "FormattedIds", "OpColumns", "check_columns", "object_columns"]
