#!/usr/bin/env python3
"""Checks a trace written by `lbscope export --perfetto` with Perfetto's own protos.

Usage: check.py TRACE

Parses TRACE as perfetto.protos.Trace (every byte, no field unknown to the protos, which is
what a wrong field number or wire type turns into) and asserts real content:
- a ClockSnapshot with BOOTTIME and MONOTONIC before any timestamped packet;
- compact sched bundles: per bundle, equal lengths of the switch columns and of the waking
  columns, comm indices inside the bundle's string table, non-negative timestamp deltas (so
  times never decrease within a bundle, nor across the bundles of one CPU), at least one
  switch;
- every TrackEvent on a track declared earlier by a TrackDescriptor, on a sequence whose
  incremental state was cleared first; migration instants named by a reason, with pid,
  src_cpu, dst_cpu and level annotations, at least one; counters only on counter tracks, at
  least one nr_running counter track with samples;
- track event times inside the time span of the sched events (the clocks line up).

Prints a summary and exits 0, or prints what failed and exits 1 (2 for usage or an
unreadable file). Where TRACE_PROCESSOR_SHELL names a trace_processor_shell binary it also
loads the trace in trace processor and checks what it imported; that check is not part of
the tests (nothing is downloaded).
"""

import collections
import os
import sys

try:
    from google.protobuf import unknown_fields
    from google.protobuf.descriptor import FieldDescriptor
    import perfetto.protos.perfetto.trace.perfetto_trace_pb2 as pb
except ImportError as e:  # pragma: no cover
    print(f"check.py: needs the `perfetto` Python package (pip install perfetto): {e}")
    sys.exit(2)

REASONS = {
    "wakeup", "fork", "exec", "periodic_balance", "nohz_idle_balance", "newidle_balance",
    "active_balance", "numa_balancing", "affinity", "hotplug", "rt_push_pull", "dl_push_pull",
    "sched_ext", "unknown",
}
BOOTTIME = pb.BUILTIN_CLOCK_BOOTTIME
MONOTONIC = pb.BUILTIN_CLOCK_MONOTONIC
SEQ_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
INSTANT = pb.TrackEvent.TYPE_INSTANT
COUNTER = pb.TrackEvent.TYPE_COUNTER
NS_PER_S = 1_000_000_000


class Failed(Exception):
    pass


class Unreadable(Exception):
    pass


def require(cond, msg):
    if not cond:
        raise Failed(msg)


def unknown_paths(msg, path="packet"):
    """Yields the path of every message (recursively) holding fields the protos don't know."""
    if len(unknown_fields.UnknownFieldSet(msg)):
        yield path
    for fd, value in msg.ListFields():
        if fd.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        items = value if fd.is_repeated else [value]
        for sub in items:
            yield from unknown_paths(sub, f"{path}.{fd.name}")


def check_bundle(b, idx, last_ts_by_cpu, stats):
    cs = b.compact_sched
    where = f"packet #{idx} (ftrace bundle of cpu {b.cpu})"
    n = len(cs.switch_timestamp)
    cols = {
        "switch_prev_state": len(cs.switch_prev_state),
        "switch_next_pid": len(cs.switch_next_pid),
        "switch_next_prio": len(cs.switch_next_prio),
        "switch_next_comm_index": len(cs.switch_next_comm_index),
    }
    for name, length in cols.items():
        require(length == n, f"{where}: {n} switch timestamps but {length} {name}")
    m = len(cs.waking_timestamp)
    cols = {
        "waking_pid": len(cs.waking_pid),
        "waking_target_cpu": len(cs.waking_target_cpu),
        "waking_prio": len(cs.waking_prio),
        "waking_comm_index": len(cs.waking_comm_index),
    }
    for name, length in cols.items():
        require(length == m, f"{where}: {m} waking timestamps but {length} {name}")
    flags = len(cs.waking_common_flags)
    require(flags in (0, m), f"{where}: {m} wakings but {flags} waking_common_flags")
    strings = len(cs.intern_table)
    for name in ("switch_next_comm_index", "waking_comm_index"):
        bad = [i for i in getattr(cs, name) if i >= strings]
        require(not bad, f"{where}: {name} {bad[:5]} outside the {strings}-string table")
    for kind, deltas in (("switch", cs.switch_timestamp), ("waking", cs.waking_timestamp)):
        acc = 0
        for i, d in enumerate(deltas):
            # Trace processor adds the deltas as int64: a "negative" one runs time backwards.
            require(i == 0 or d < 2**63, f"{where}: {kind} time goes backwards at event {i}")
            acc = (acc + d) % 2**64
            if i == 0:
                key = (b.cpu, kind)
                prev = last_ts_by_cpu.get(key, 0)
                require(acc >= prev, f"{where}: first {kind} at {acc} before the previous "
                        f"bundle's last one at {prev}")
        if deltas:
            last_ts_by_cpu[(b.cpu, kind)] = acc
            stats["ts_min"] = min(stats.get("ts_min", acc), sum(deltas[:1]))
            stats["ts_max"] = max(stats.get("ts_max", 0), acc)
    stats["switches"] += n
    stats["wakings"] += m
    stats["strings"] += strings
    stats["lost_bundles"] += int(b.lost_events)


def check(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Unreadable(f"cannot read {path}: {e}")
    trace = pb.Trace()
    try:
        consumed = trace.ParseFromString(data)
    except Exception as e:  # DecodeError and friends
        raise Failed(f"not a Perfetto trace: {e}")
    require(consumed == len(data), f"parsed {consumed} of {len(data)} bytes")
    require(len(trace.packet) > 0, "the trace holds no packet")

    kinds = collections.Counter()
    stats = collections.Counter()
    tracks = {}  # uuid -> (name, is_counter)
    cleared_seqs = set()
    last_ts_by_cpu = {}
    instants = collections.Counter()
    counter_samples = collections.Counter()
    event_times = []
    clock_seen = False
    for i, p in enumerate(trace.packet):
        bad = next(unknown_paths(p, f"packet #{i}"), None)
        require(bad is None, f"{bad}: fields unknown to Perfetto's protos")
        kind = p.WhichOneof("data") or "none"
        kinds[kind] += 1
        if p.sequence_flags & SEQ_CLEARED or p.incremental_state_cleared:
            cleared_seqs.add(p.trusted_packet_sequence_id)
        if kind == "clock_snapshot":
            ids = {c.clock_id for c in p.clock_snapshot.clocks}
            require({BOOTTIME, MONOTONIC} <= ids, f"packet #{i}: clock snapshot lacks "
                    f"BOOTTIME or MONOTONIC: {sorted(ids)}")
            clock_seen = True
        elif kind == "ftrace_events":
            require(p.ftrace_events.HasField("compact_sched"),
                    f"packet #{i}: ftrace bundle without compact_sched")
            check_bundle(p.ftrace_events, i, last_ts_by_cpu, stats)
            stats["bundles"] += 1
        elif kind == "track_descriptor":
            d = p.track_descriptor
            require(d.uuid not in tracks, f"packet #{i}: track {d.uuid} declared twice")
            if d.HasField("parent_uuid"):
                require(d.parent_uuid in tracks,
                        f"packet #{i}: track {d.name!r} before its parent {d.parent_uuid}")
            tracks[d.uuid] = (d.name, d.HasField("counter"))
        elif kind == "track_event":
            require(clock_seen, f"packet #{i}: track event before any clock snapshot")
            require(p.trusted_packet_sequence_id in cleared_seqs,
                    f"packet #{i}: track event on sequence {p.trusted_packet_sequence_id} "
                    "whose incremental state was never cleared")
            require(p.HasField("timestamp"), f"packet #{i}: track event without timestamp")
            e = p.track_event
            require(e.track_uuid in tracks,
                    f"packet #{i}: track event on undeclared track {e.track_uuid}")
            name, is_counter = tracks[e.track_uuid]
            event_times.append(p.timestamp)
            if e.type == INSTANT:
                require(e.name in REASONS, f"packet #{i}: instant named {e.name!r}, not a "
                        "migration reason")
                ann = {a.name for a in e.debug_annotations}
                missing = {"pid", "src_cpu", "dst_cpu", "level"} - ann
                require(not missing, f"packet #{i}: migration lacks {sorted(missing)}")
                instants[e.name] += 1
            elif e.type == COUNTER:
                require(is_counter, f"packet #{i}: counter value on non-counter track {name!r}")
                counter_samples[name] += 1
            else:
                raise Failed(f"packet #{i}: unexpected track event type {e.type}")
        elif kind == "process_tree":
            stats["threads"] += len(p.process_tree.threads)
            stats["processes"] += len(p.process_tree.processes)

    require(stats["bundles"] > 0, "no compact sched bundle")
    require(stats["switches"] > 0, "no sched_switch in any bundle")
    require(sum(instants.values()) > 0, "no migration instant event")
    nr_tracks = {n for n in counter_samples if "nr_running" in n}
    require(nr_tracks, "no nr_running counter track with samples")
    if event_times:
        lo, hi = stats["ts_min"] - NS_PER_S, stats["ts_max"] + NS_PER_S
        outside = [t for t in event_times if not lo <= t <= hi]
        require(not outside, f"{len(outside)} track events outside the sched events' span "
                f"[{stats['ts_min']}, {stats['ts_max']}]: clocks do not line up")

    idle_tracks = {n for n in counter_samples if n not in nr_tracks}
    print(f"{path}: OK, {len(data)} bytes, {len(trace.packet)} packets")
    print("  packets: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    span = (stats["ts_max"] - stats["ts_min"]) / NS_PER_S
    print(f"  compact sched: {stats['bundles']} bundles on {len({k[0] for k in last_ts_by_cpu})}"
          f" CPUs, {stats['switches']} switches, {stats['wakings']} wakings, "
          f"{stats['strings']} interned comms, {stats['lost_bundles']} bundles after lost "
          f"events, {span:.3f} s")
    print(f"  migrations: {sum(instants.values())} instants: "
          + ", ".join(f"{k} {v}" for k, v in instants.most_common()))
    print(f"  counters: {len(nr_tracks)} nr_running tracks "
          f"({sum(counter_samples[n] for n in nr_tracks)} samples), "
          f"{len(idle_tracks)} other tracks "
          f"({sum(counter_samples[n] for n in idle_tracks)} samples)")
    print(f"  tracks declared: {len(tracks)}; process tree: {stats['threads']} threads, "
          f"{stats['processes']} processes")


def trace_processor_check(path):
    """Loads the trace in trace processor, if a binary is at hand."""
    binary = os.environ.get("TRACE_PROCESSOR_SHELL")
    if not binary:
        # Not part of the tests (README): only where a binary is named.
        return
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    tp = TraceProcessor(trace=path, config=TraceProcessorConfig(bin_path=binary))
    try:
        def one(sql):
            return next(iter(tp.query(sql))).n

        slices = one("select count(*) as n from sched")
        errors = one("select ifnull(sum(value), 0) as n from stats where name in "
                     "('compact_sched_has_parse_errors', 'task_state_invalid') ")
        instants = one("select count(*) as n from slice where dur = 0")
        counters = one("select count(*) as n from counter")
        require(slices > 0, "trace processor imported no sched slice")
        require(errors == 0, f"trace processor reports {errors} compact sched errors")
        require(instants > 0, "trace processor imported no migration instant")
        require(counters > 0, "trace processor imported no counter sample")
        print(f"  trace processor: {slices} sched slices, {instants} instants, "
              f"{counters} counter samples, no compact sched errors")
    finally:
        tp.close()


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2])
        return 2
    path = sys.argv[1]
    try:
        check(path)
        trace_processor_check(path)
    except Unreadable as e:
        print(f"check.py: {e}")
        return 2
    except Failed as e:
        print(f"check.py: {path}: FAILED: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
