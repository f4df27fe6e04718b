#!/usr/bin/env python3
"""The lab's judge and table maker.

Per run (--kernel ... --recording ...): turns one boot (serial console log and recording) into
the lab's JSON line on stdout (also saved beside the recording as .json), and fails when
  - the balancer hook expected on the kernel did not load,
  - the recording is unreadable or holds no balancer decisions,
  - the scenario did not raise every finding it is built for (EXPECTED_FINDINGS, or
    EXPECTED_FINDINGS_BY_TOPOLOGY where the topology changes it),
  - the model's agreement with the kernel falls under its goals, judged where there is enough
    to judge (see check_goals): Cohen's kappa for balanced / not balanced, recall and
    precision on the kernel's imbalanced searches at every level, the migration type per
    kernel type; the stack reasons against the balancer hooks' reason, per reason,
  - the balancer hooks could not name every balancer reason (origin hooks missing),
  - in the rt scenario, the hooks on the RT class's push_rt_task and pull_rt_task did not
    load (migrations made inside their calls pair with rt_push_pull),
  - a scenario built to exercise a migration type or NUMA-level imbalances did not
    (EXPECTED_TYPES, MIN_NUMA_IMBALANCED),
  - lbscope's balancer counters (lb_count, lb_balanced, lb_failed, lb_gained per domain level
    and idle type, from the balancer's calls) differ from the kernel's own: the difference of
    the two /proc/schedstat texts the recording holds, parsed here from the kernel's layout
    (check_schedstat), by more than the counts lbscope marks in flight during a read,
  - `report --fold on`, run live beside `report --fold off` over a short load after the
    scenario, gave no snapshot, lost events, or counted the load process's run-queue latency
    samples more than FOLD_TOLERANCE apart from the streaming report's.
--table FILE.json...: the Markdown table of those runs (the README's lab table).
--compare FILE.json...: for runs made with the balancer hooks by fentry and by kprobe
(`<run>.json` beside `<run>-kprobe.json`), the agreement figures side by side."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# The balancer entry point each kernel must accept (as fentry, or as kprobe when asked) in the
# lab guests.
EXPECTED_HOOK = {"6.1": "load_balance", "6.12": "sched_balance_rq",
                 "6.1-rt": "load_balance", "6.12-rt": "sched_balance_rq"}
# The RT class's push and pull functions the rt scenario's oracle needs, on every kernel.
EXPECTED_RT_HOOKS = {"rt": ["push_rt_task", "pull_rt_task"]}
# The findings each scenario is built to produce: every one of them must be raised.
EXPECTED_FINDINGS = {
    "wakeup-storm": ["busy_wakeup"],
    "hackbench": ["busy_wakeup", "ping_pong"],
    "mixed": ["missed_pull", "busy_wakeup"],
    "group-imbalance": ["missed_pull", "busy_wakeup"],
    "numa-spread": ["uneven_spread", "missed_pull"],
    "overload": ["missed_pull"],
    # Built to make the kernel use the active-balance stopper (checked by the reasons).
    "active": [],
    # Built for the RT class's pushes and pulls (checked by the reasons).
    "rt": [],
}
# Where a topology changes what a scenario builds: numa-spread on 2s-smt-numa (8 threads,
# two nodes of 4 CPUs) is not built for uneven_spread. The model's 20 ms samples of its boots
# (6.1, 2026-11-25) show each herd's threads uneven for 40-60 ms after their release (7/1, 6/2
# with CPUs idle on node 1), then 5/4 or 4/4: the kernel undoes it within the finding's
# 100 ms hold, and a finding there would be a false alarm. It was raised in 4 of 7 boots
# that day, when a spread held longer; on 4node (16 threads over four nodes) it was raised in
# every run of the matrices so far.
# mixed on 2s-smt-numa (4 CPU hogs and 8 sleepers on 8 CPUs) is not built for missed_pull
# either: 8 boots of it (2026-11-25/26, both kernels, fentry and kprobe) raised it 0, 4, 6, 7,
# 7, 13, 16 and 37 times, where 4node raised it 8-41 times in every run. There the queues
# rarely wait long enough beside an idle CPU; missed_pull stays checked on that topology by
# group-imbalance, numa-spread and overload.
EXPECTED_FINDINGS_BY_TOPOLOGY = {("2s-smt-numa", "numa-spread"): ["missed_pull"],
                                 ("2s-smt-numa", "mixed"): ["busy_wakeup"]}
# The migration types a scenario is built to make the kernel use (at least MIN_TYPE_PAIRS
# searches both sides found imbalanced with that kernel type). misfit needs asymmetric CPU
# capacities, which no lab topology has (x86 under QEMU): no scenario can exercise it.
EXPECTED_TYPES = {"overload": ["load", "util", "task"], "numa-spread": ["util", "task"]}
# The balancer reasons a scenario is built to produce (at least MIN_REASON_PAIRS pairs).
EXPECTED_REASONS = {"active": ["active_balance"], "overload": ["periodic_balance"],
                    "rt": ["rt_push_pull"]}
MIN_TYPE_PAIRS = 20
# NUMA-level imbalances the kernel must find in a run of these scenarios.
MIN_NUMA_IMBALANCED = {"overload": 100, "numa-spread": 100}
# Goals, judged per level where the level has at least MIN_SEARCHES searches; recall needs
# MIN_CLASS kernel-imbalanced searches and precision MIN_CLASS model-imbalanced ones there.
KAPPA_GOAL, RECALL_GOAL, PRECISION_GOAL = 0.8, 0.9, 0.9
MIN_SEARCHES, MIN_CLASS = 50, 20
TYPE_GOAL = 0.9          # per kernel migration type with at least MIN_TYPE_PAIRS pairs
REASON_GOAL = 0.99       # per hook reason with at least MIN_REASON_PAIRS pairs
MIN_REASON_PAIRS = 20
# A figure under its goal that rests on fewer than this many searches or pairs (at least the
# MIN_* above, which decide whether it is judged) is printed and counted as a known miss: at
# 20, two searches move it by 10 points.
FAIL_MIN_COUNT = 50
# Folded and streaming reports start and stop a moment apart: samples of those moments differ.
FOLD_TOLERANCE = 0.05
BALANCER_REASONS = ["periodic_balance", "nohz_idle_balance", "newidle_balance", "active_balance"]
COLUMNS = ["kernel", "topology", "scenario", "boot s",
           "balanced / not per level: kappa, recall, precision (kernel imbalanced of searches; "
           "constant: agreement, precision)",
           "migration type per kernel type (pairs; constant)",
           "reason per hook reason (pairs; constant)",
           "idle-while-others-wait (movable) per level", "runqlat p99 us", "findings",
           "known misses"]


# Goals the model does not meet yet in some runs, by (topology, scenario) and the check's
# message prefix, with the reason (README, "What the matrix shows"). A known miss is printed
# as such and counted, and does not fail the run; any other miss does. None is listed now:
# the last two (SMT under group-imbalance and the active scenario's reason count, both on
# 2s-smt-numa) were mended by resending the root load after cgroup reweights and by a longer
# active scenario.
KNOWN_MISSES = {
}


def known_miss(a, msg):
    """The reason a miss is known, or None."""
    for (topo, scen, prefix), why in KNOWN_MISSES.items():
        if a.topology == topo and a.scenario == scen and msg.startswith(prefix):
            return why
    return None


def miss(a, out, msg, n=None):
    """Reports a missed check: a known miss, or a figure's miss resting on fewer than
    FAIL_MIN_COUNT pairs or searches, is printed and kept in the run's line (True); any other
    fails the run (False)."""
    why = known_miss(a, msg)
    if not why and n is not None and n < FAIL_MIN_COUNT:
        why = f"rests on {n}, fewer than {FAIL_MIN_COUNT}: one or two searches decide it"
    if not why:
        fail(a, msg)
        return False
    print(f"lab: {a.kernel} {a.topology} {a.scenario}: KNOWN MISS: {msg} ({why})",
          file=sys.stderr)
    out["known_misses"].append(msg)
    return True


# /proc/schedstat's domain lines (Documentation/scheduler/sched-stats.rst): the counters per
# idle type, and the order of the idle types, by version. Named as lbscope's JSON names them.
SCHEDSTAT_IDLE_ORDER = {15: ["idle", "busy", "newly_idle"], 16: ["busy", "idle", "newly_idle"],
                        17: ["busy", "idle", "newly_idle"]}
SCHEDSTAT_PER_IDLE = {15: 8, 16: 8, 17: 11}
SCHEDSTAT_FIELDS = {"lb_count": 0, "lb_balanced": 1, "lb_failed": 2, "lb_gained": {15: 4, 16: 4, 17: 7}}


def kernel_schedstat(text):
    """{(cpu, N): (span as a set of CPUs, {idle: [counters]})} of one /proc/schedstat text, and
    its version."""
    version, cpu, out = None, None, {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "version":
            version = int(f[1])
        elif f[0].startswith("cpu"):
            cpu = int(f[0][3:])
        elif f[0].startswith("domain"):
            rest = f[2:] if version == 17 else f[1:]
            mask = int(rest[0].replace(",", ""), 16)
            span = frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)
            per = SCHEDSTAT_PER_IDLE[version]
            nums = [int(x) for x in rest[1:]]
            assert len(nums) == 3 * per + 12, line
            out[(cpu, int(f[0][6:]))] = (span, {idle: nums[k * per:(k + 1) * per]
                                                for k, idle in enumerate(SCHEDSTAT_IDLE_ORDER[version])})
    return version, out


def cpulist(s):
    cpus = set()
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def skipped_runs(reclog):
    """Runs of lbscope's programs the kernel says it skipped (recursion_misses), from the
    recorder's closing warning: {program: count}."""
    m = re.search(r"the kernel skipped \d+ runs of lbscope's programs [^:]*: (.*)", reclog)
    if not m:
        return {}
    return {name: int(n) for name, n in
            (part.rsplit(" ", 1) for part in m.group(1).strip().split(", "))}


def check_schedstat(a, out, snaps, counters, reclog=""):
    """lbscope's counts against the kernel's schedstat difference, per level and idle type:
    equal, or short by no more than the counts lbscope left out as in flight during a read
    and the runs of its programs the kernel itself says it skipped."""
    out["schedstat"] = None
    skipped = skipped_runs(reclog)
    out["skipped_runs"] = skipped
    skipped_total = sum(skipped.values())
    if not counters or not counters[-1]["calls_recorded"]:
        fail(a, "the recording holds no balancer calls (fentry/fexit on the balancer proper)")
        return False
    reads, spans, balancer = {}, {}, []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.jsonl")
        subprocess.run([a.lbscope, "export", "--jsonl", path, a.recording],
                       capture_output=True, check=False)
        for line in open(path) if os.path.exists(path) else []:
            if '"schedstat"' in line:
                e = json.loads(line)
                k = e["kind"]
                if k.get("type") == "schedstat":
                    reads[k["end"]] = k["text"]
                    spans[k["end"]] = (e["ts_ns"], e["ts_ns"] + k["read_ns"])
            elif '"balance' in line:
                # Parsed only if the imbalance check fails (imbalance_clues).
                balancer.append(line)
    if set(reads) != {False, True}:
        fail(a, f"the recording holds {len(reads)} of the 2 /proc/schedstat reads")
        return False
    (v0, start), (v1, end) = kernel_schedstat(reads[False]), kernel_schedstat(reads[True])
    # A domain's level: the one whose span around the CPU is the domain's (lbscope's topology,
    # read from sysfs, not from schedstat).
    level_of = {}
    for d in snaps[-1]["domains"]:
        level_of[cpulist(d["span"])] = d["level"]
    kernel = {}
    for key, (span, by_idle) in end.items():
        if key not in start or start[key][0] != span:
            continue
        level = level_of.get(span, f"domain{key[1]}")
        for idle, nums in by_idle.items():
            row = kernel.setdefault((level, idle), {c: 0 for c in SCHEDSTAT_FIELDS})
            for c, at in SCHEDSTAT_FIELDS.items():
                i = at[v1] if isinstance(at, dict) else at
                row[c] += (nums[i] - start[key][1][idle][i]) % (1 << 32)
            # lb_imbalance: one field before version 17, four (by migration type) from it.
            imb = range(3, 7) if v1 == 17 else range(3, 4)
            row["lb_imbalance"] = row.get("lb_imbalance", 0) + sum(
                (nums[i] - start[key][1][idle][i]) % (1 << 32) for i in imb)
    ours = {(r["level"], r["idle"]): r["lbscope"] for r in counters[-1]["rows"] if r["lbscope"]}
    by_kprobe = (a.balancer_attach or "fentry") == "kprobe"
    rows, ok = [], True
    for key in sorted(set(kernel) | set(ours)):
        k, o = kernel.get(key), ours.get(key)
        for c in SCHEDSTAT_FIELDS:
            kv, ov = (k or {}).get(c, 0), (o or {}).get(c, 0)
            flight = (o or {}).get("in_flight", {}).get(c, 0)
            if kv == ov == 0:
                continue
            within = 0 <= kv - ov <= flight + skipped_total
            rows.append({"level": key[0], "idle": key[1], "counter": c, "lbscope": ov,
                         "kernel": kv, "in_flight": flight, "skipped_runs": skipped_total,
                         "equal": kv == ov})
            if not within and by_kprobe and kv > ov:
                # The kernel skips a kprobe program while another BPF program runs on that
                # CPU (bpf_prog_active), and still counts the call: fewer calls recorded by
                # kprobe is that, not a counting error. Printed, not failed.
                print(f"lab: {a.kernel} {a.topology} {a.scenario}: schedstat {key[0]} "
                      f"{key[1]} {c}: lbscope {ov}, kernel {kv} by kprobe (calls whose "
                      "kprobe the kernel skipped while another BPF program ran)",
                      file=sys.stderr)
            elif not within:
                fail(a, f"schedstat {key[0]} {key[1]} {c}: lbscope {ov}, kernel {kv} "
                        f"({flight} in flight during a read, {skipped_total} runs the kernel "
                        "skipped)")
                ok = False
    # The imbalance: lbscope counts what it can tell the kernel added, and apart what the
    # kernel added or not (calls with no busiest queue or only pinned tasks, and calls made
    # during a read): the kernel's figure must lie between the two.
    imbalance = []
    for key in sorted(set(kernel) | set(ours)):
        kv = (kernel.get(key) or {}).get("lb_imbalance", 0)
        o = ours.get(key) or {}
        lo = sum((o.get("imbalance") or {}).values())
        hi = lo + sum((o.get("imbalance_undetermined_amount") or {}).values()) \
            + sum((o.get("imbalance_in_flight_amount") or {}).values())
        if kv == lo == 0:
            continue
        imbalance.append({"level": key[0], "idle": key[1], "lbscope": lo,
                          "lbscope_with_undetermined": hi, "kernel": kv})
        # Calls the kernel counted beyond those recorded and those in flight during a read:
        # by kprobe, calls whose program the kernel skipped (printed above as such); their
        # imbalance is in the kernel's figure and in no record.
        skipped_calls = ((kernel.get(key) or {}).get("lb_count", 0) - o.get("lb_count", 0)
                         - (o.get("in_flight") or {}).get("lb_count", 0))
        # A skipped run of a call's own programs (its entry, its exit, its failure) also leaves
        # a call's imbalance in no record, though the call may still be counted (taken as in
        # flight: 6.12 hackbench, kp_call_failed skipped, lb_failed one short, 119 short).
        skipped_calls += sum(n for p, n in skipped.items() if p.startswith("kp_call"))
        if kv > hi and by_kprobe and skipped_calls > 0:
            print(f"lab: {a.kernel} {a.topology} {a.scenario}: schedstat {key[0]} {key[1]} "
                  f"lb_imbalance: kernel {kv}, lbscope {lo} to {hi}, with {skipped_calls} "
                  "calls, or runs of a call's programs, that the kernel skipped (their "
                  "imbalance is in no record)",
                  file=sys.stderr)
        elif not lo <= kv <= hi:
            fail(a, f"schedstat {key[0]} {key[1]} lb_imbalance: kernel {kv}, lbscope {lo} "
                    f"to {hi} with the undetermined and in-flight calls; "
                    + imbalance_clues(key, kernel.get(key) or {}, o, balancer, spans,
                                      snaps[-1]["domains"], reclog))
            ok = False
    out["schedstat"] = {"version": v1, "rows": rows, "equal": sum(r["equal"] for r in rows),
                        "compared": len(rows), "lost_events": counters[-1]["lost_events"],
                        "imbalance": imbalance,
                        "imbalance_equal": sum(r["lbscope"] == r["kernel"] for r in imbalance)}
    return ok


def imbalance_clues(key, kernel_row, ours, balancer, spans, domains, reclog):
    """What a failed imbalance check leaves to go on (`balancer`: the recording's balancer
    records, JSON lines in stream order), in one line: the row's counts beside the
    kernel's, the calls that went on to move tasks or failed with no imbalanced search of
    theirs recorded, the imbalanced calls within 20 ms of a read (entry and exit against the
    read's span, ms), and the recorder's warnings about records late, lost or skipped."""
    weight = {len(cpulist(d["span"])): d["level"] for d in domains}
    pending, searchless, near = {}, 0, []
    for e in map(json.loads, balancer):
        k = e["kind"]
        if k["type"] == "balance" and k["pid"] is None:
            pending.setdefault(e["cpu"], []).append(k)
        elif k["type"] == "balance_call":
            mine = [s for s in pending.pop(e["cpu"], [])
                    if s["sd_weight"] == k["sd_weight"] and s["idle"] == k["idle"]]
            if (weight.get(k["sd_weight"]), k["idle"].replace("not_idle", "busy")) != key:
                continue
            amount = sum(s["imbalance"] for s in mine if not s["balanced"])
            if (k["moved"] or k["failed"]) and not amount:
                searchless += 1
            entry, exit_ = e["ts_ns"], e["ts_ns"] + k["len_ns"]
            for end, (r0, r1) in spans.items():
                if amount and entry < r1 + 20_000_000 and exit_ > r0 - 20_000_000:
                    near.append(f"{'end' if end else 'start'} read: cpu {e['cpu']} "
                                f"{(entry - r0) / 1e6:+.2f}..{(exit_ - r0) / 1e6:+.2f} ms "
                                f"(read {(r1 - r0) / 1e6:.2f} ms) imbalance {amount}")
    counts = ", ".join(f"{c} {kernel_row.get(c, 0)}/{ours.get(c, 0)}"
                       f"+{(ours.get('in_flight') or {}).get(c, 0)}"
                       for c in SCHEDSTAT_FIELDS)
    warnings = [l.strip() for l in reclog.splitlines()
                if re.search(r"late|lost|skipped|malformed", l)]
    return (f"kernel/lbscope+in flight: {counts}; {searchless} calls went on with no "
            f"imbalanced search recorded; imbalanced calls near a read: "
            f"{'; '.join(near[:6]) or 'none'}; recorder: {' | '.join(warnings)[:600] or 'no warnings'}")


def between(text, name):
    m = re.search(rf"^LAB-{name}-BEGIN\n(.*?)^LAB-{name}-END$", text, re.S | re.M)
    return m.group(1) if m else None


# This run's failures, kept in its JSON line ("failures") so the lab's last lines can name them.
FAILURES = []


def fail(a, msg):
    print(f"lab: {a.kernel} {a.topology} {a.scenario}: {msg}", file=sys.stderr)
    FAILURES.append(msg)


def summarize(a):
    text = open(a.console, errors="replace").read().replace("\r", "")
    doctor = between(text, "DOCTOR")
    checks = []
    if doctor:
        try:
            checks = json.loads(doctor.strip().splitlines()[-1])
        except (ValueError, IndexError):
            checks = []
    kind = a.balancer_attach or "fentry"
    loaded = sorted(c["item"].split("/", 1)[1] for c in checks
                    if c["item"].startswith(f"hook {kind}/") and c["detail"] == "loads")
    reclog = between(text, "RECLOG") or "" 
    out = {"kernel": a.kernel, "topology": a.topology, "scenario": a.scenario,
           "balancer_hooks": EXPECTED_HOOK.get(a.kernel) in loaded,
           "balancer_attach": kind, "hooks_loaded": loaded,
           "kallsyms": (between(text, "KALLSYMS") or "").splitlines(), "domains": (between(text, "DOMAINS") or "").split(),
           "migrations": None, "balancer_migrations": None, "migrations_by_reason": None,
           "reason_agreement": None, "reason_matched": 0,
           "model_balanced_agreement": None, "model_decisions": 0,
           "model_migration_type_agreement": None, "model_both_unbalanced": 0,
           "model_per_level": {}, "findings": {}, "idle_while_waiting_movable": {},
           "runqlat_p99_us": None, "balance_events": 0, "balance_levels": {},
           "recording": a.recording, "boot_s": round(float(a.boot_s), 1), "known_misses": []}
    ok = True
    # The workload generators print `done ...` when they finish, and clap's `error: ...` when
    # they refuse their arguments: a scenario whose workload did not run proves nothing.
    scen = re.sub(r"\x1b\[[0-9;]*m", "", between(text, "SCENARIO") or "")
    errors = [l for l in scen.splitlines() if re.match(r"(error|\S+: )", l) and "done " not in l]
    if not re.search(r"^done ", scen, re.M) or errors:
        fail(a, f"the workload did not run as set: {(errors or ['no done line'])[0][:200]}")
        ok = False
    ok = check_fold(a, text, out) and ok
    if not out["balancer_hooks"]:
        fail(a, f"{kind}/{EXPECTED_HOOK.get(a.kernel)} did not load (loaded: {loaded or 'none'})")
        ok = False
    rt_missing = [f for f in EXPECTED_RT_HOOKS.get(a.scenario, []) if f not in loaded]
    if rt_missing:
        fail(a, f"{kind}/{', '.join(rt_missing)} did not load (loaded: {loaded or 'none'})")
        ok = False
    # The recorder says how its balancer hooks attached: the kind asked for, not another.
    if f"balancer hooks by {kind} " not in reclog:
        fail(a, f"the recorder did not run with balancer hooks by {kind}: {reclog.strip()[:300]}")
        ok = False
    # One pass: the intervals, then the validation line (the kernel's decisions vs the model's).
    rep = subprocess.run([a.lbscope, "report", a.recording, "-i", "100000", "--json",
                          "--validate"], capture_output=True, text=True)
    lines = [json.loads(line) for line in rep.stdout.splitlines() if line.startswith("{")]
    snaps = [x for x in lines if "validation" not in x]
    # The run's balancer counters are in its last snapshot.
    counters = [x["balancer_counters_run"] for x in snaps if x.get("balancer_counters_run")]
    val = [x["validation"] for x in lines if "validation" in x]
    if not snaps:
        fail(a, f"no readable recording ({rep.stderr.strip()[:200]}); console in {a.console}")
        return out, False
    ok = check_schedstat(a, out, snaps, counters, reclog) and ok
    by_reason = {}
    for s in snaps:
        for r, n in s["migrations"]["by_reason"].items():
            by_reason[r] = by_reason.get(r, 0) + n
        for w in s.get("idle_while_waiting", []):
            iww = out["idle_while_waiting_movable"]
            iww[w["level"]] = round(max(iww.get(w["level"], 0.0), w["movable_fraction"]), 4)
        for k, n in s.get("findings_by_kind", {}).items():
            if n:
                out["findings"][k] = out["findings"].get(k, 0) + n
    out["migrations"] = sum(s["migrations"]["total"] for s in snaps)
    out["migrations_by_reason"] = {r: n for r, n in by_reason.items() if n}
    out["balancer_migrations"] = sum(by_reason.get(r, 0) for r in BALANCER_REASONS)
    out["runqlat_p99_us"] = max(s["runqlat_us"]["p99"] for s in snaps)
    if not val:
        fail(a, f"no balancer decisions to validate against ({rep.stderr.strip()[:200]})")
        return out, False
    v = val[-1]
    out.update({
        "reason_agreement": v["reason_agreement"], "reason_matched": v["reasons"]["matched"],
        "reason_matched_rt": v["reasons"].get("matched_rt", 0),
        "reason_by_hook": {k: {"pairs": c["pairs"], "agreement": c["agreement"]}
                           for k, c in v["reasons"]["by_reason"].items()},
        "reason_constant_agreement": v["reasons"]["constant_agreement"],
        "model_balanced_agreement": v["balanced_agreement"],
        "model_decisions": v["total"]["decisions"],
        "model_migration_type_agreement": v["migration_type_agreement"],
        "model_both_unbalanced": v["total"]["both_unbalanced"],
        "model_per_level": {k: dict(level_scores(l), raced=v["raced"].get(k, 0),
                                    stalled=v.get("stalled", {}).get(k, 0))
                            for k, l in v["per_level"].items()},
        "model_raced": sum(v["raced"].values()),
        "model_stalled": sum(v.get("stalled", {}).values()),
        "model_stalled_judged": sum(v.get("stalled_judged", {}).values()),
        "model_total": level_scores(v["total"]),
        "balance_events": v["balance_events"],
        "balance_levels": v["balance_events_per_sd_level"],
        "validation_late": v["late"],
        "model_disagreements_turned_by": v.get("disagreement_margins", {}),
        "model_pelt_at_search": v.get("pelt_at_search", 0),
        "model_per_level_sampled": {k: level_scores(l) for k, l in
                                    v.get("sampled", {}).get("per_level", {}).items()},
    })
    if v["late"]:
        # Events older than the reorder window when they came were folded out of order: the
        # model judged searches against another moment's state, so no figure can be trusted.
        fail(a, f"{v['late']} events came later than validation's reorder window: the "
             "agreement figures of this run are not judged")
        ok = False
    want = EXPECTED_FINDINGS_BY_TOPOLOGY.get((a.topology, a.scenario),
                                             EXPECTED_FINDINGS.get(a.scenario, []))
    missing = [k for k in want if not out["findings"].get(k)]
    if missing:
        msg = f"findings it is built for not raised: {', '.join(missing)}; got {out['findings']}"
        ok = miss(a, out, msg) and ok
    for msg, n in check_goals(a.scenario, out):
        ok = miss(a, out, msg, n) and ok
    return out, ok


def level_scores(l):
    """One level's figures for the JSON line: searches, the balanced / not balanced scores
    with the constant answers' beside them, and the migration type per kernel type."""
    sc, ty = l["scores"], l["types"]
    return {"searches": l["decisions"], "kernel_imbalanced": sc["kernel_imbalanced"],
            "model_imbalanced": sc["model_imbalanced"], "agreement": sc["agreement"],
            "constant_agreement": sc["constant_agreement"], "kappa": sc["kappa"],
            "recall": sc["recall"], "precision": sc["precision"],
            "constant_precision": sc["constant_precision"],
            "types": {k: {"pairs": c["pairs"], "agreement": c["agreement"]}
                      for k, c in ty["by_type"].items()},
            "type_constant_agreement": ty["constant_agreement"]}


def check_goals(scenario, out):
    """Every goal the run misses: (message, the count the figure rests on, or None for a
    check of the scenario itself)."""
    msgs = []
    for name, l in out["model_per_level"].items():
        if l["searches"] < MIN_SEARCHES:
            continue
        if l["kappa"] is not None and l["kappa"] < KAPPA_GOAL:
            # Kappa is decided by the kernel's rarer verdict: over 1,431 SMT searches of which
            # the kernel found 13 imbalanced, five misses move it from 1.0 to 0.76.
            rare = min(l["kernel_imbalanced"], l["searches"] - l["kernel_imbalanced"])
            msgs.append((f"{name}: kappa {l['kappa']:.3f} over {l['searches']} searches "
                         f"({rare} of the kernel's rarer verdict) is under {KAPPA_GOAL}", rare))
        if l["kernel_imbalanced"] >= MIN_CLASS and l["recall"] < RECALL_GOAL:
            msgs.append((f"{name}: recall {l['recall']:.3f} of {l['kernel_imbalanced']} "
                         f"kernel imbalances is under {RECALL_GOAL}", l["kernel_imbalanced"]))
        if l["model_imbalanced"] >= MIN_CLASS and l["precision"] < PRECISION_GOAL:
            msgs.append((f"{name}: precision {l['precision']:.3f} of {l['model_imbalanced']} "
                         f"model imbalances is under {PRECISION_GOAL}", l["model_imbalanced"]))
    for t, c in out["model_total"]["types"].items():
        if c["pairs"] >= MIN_TYPE_PAIRS and c["agreement"] < TYPE_GOAL:
            msgs.append((f"migration type {t}: {c['agreement']:.3f} of {c['pairs']} pairs is "
                         f"under {TYPE_GOAL}", c["pairs"]))
    for t in EXPECTED_TYPES.get(scenario, []):
        n = out["model_total"]["types"].get(t, {}).get("pairs", 0)
        if n < MIN_TYPE_PAIRS:
            msgs.append((f"migration type {t}: {n} pairs, the scenario is built for at least "
                         f"{MIN_TYPE_PAIRS}", None))
    numa = out["model_per_level"].get("numa", {}).get("kernel_imbalanced", 0)
    if numa < MIN_NUMA_IMBALANCED.get(scenario, 0):
        msgs.append((f"{numa} NUMA-level imbalances found by the kernel, the scenario is "
                     f"built for at least {MIN_NUMA_IMBALANCED[scenario]}", None))
    for r in EXPECTED_REASONS.get(scenario, []):
        n = out["reason_by_hook"].get(r, {}).get("pairs", 0)
        if n < MIN_REASON_PAIRS:
            msgs.append((f"reason {r}: {n} pairs, the scenario is built for at least "
                         f"{MIN_REASON_PAIRS}", None))
    for r, c in out["reason_by_hook"].items():
        if r == "periodic_or_nohz":
            msgs.append((f"{c['pairs']} balancer migrations without the pass's origin: the "
                         "origin hooks (balancer softirq, active-balance stopper) did not run",
                         None))
        elif c["pairs"] >= MIN_REASON_PAIRS and c["agreement"] < REASON_GOAL:
            msgs.append((f"reason {r}: the stack table agrees in {c['agreement']:.3f} of "
                         f"{c['pairs']} pairs, under {REASON_GOAL}", c["pairs"]))
    return msgs


def check_fold(a, text, out):
    """The folded report against the streaming one over the same load (see the docstring)."""
    lines = [l for l in (between(text, "FOLD") or "").splitlines() if l.startswith("{")]
    if len(lines) != 2:
        why = ""
        if re.search(r"terminating on signal 15 .*timeout", text):
            why = (f" (the guest was stopped by the lab's boot timeout after {a.boot_s} s: "
                   "a slow host; LAB_BOOT_TIMEOUT raises it)")
        fail(a, f"the folded and streaming reports gave {len(lines)} of 2 snapshots{why}")
        return False
    fold, full = (json.loads(l) for l in lines)
    # The two start a moment apart (under TCG, loading takes seconds), so the kernel's own
    # threads are seen over different windows: compare the load's process, traced whole by both.
    def load(snap):
        return {p["tgid"]: p["count"] for p in snap["runqlat_by_process"] if p["comm"] == "mixed"}
    ours, theirs = load(fold), load(full)
    tgid = next(iter(ours or theirs), None)
    n, m = ours.get(tgid, 0), theirs.get(tgid, 0)
    out["fold"] = {"load_samples": n, "streaming_load_samples": m,
                   "samples": fold["runqlat_us"]["count"],
                   "streaming_samples": full["runqlat_us"]["count"], "events": fold["events"],
                   "streaming_events": full["events"], "lost": fold["lost_events"],
                   "p99_us": fold["runqlat_us"]["p99"],
                   "streaming_p99_us": full["runqlat_us"]["p99"]}
    if fold["lost_events"] or not n or abs(n - m) > FOLD_TOLERANCE * max(m, 1):
        fail(a, f"folded report: the load's process had {n} samples vs {m} streaming, "
                f"{fold['lost_events']} events lost")
        return False
    return True


def pct(v, n=None):
    if v is None:
        return "n/a"
    return f"{v:.1%}" if n is None else f"{v:.1%} ({n})"


def level_cell(name, l):
    kappa = "n/a" if l["kappa"] is None else f"{l['kappa']:.2f}"
    raced = f", {l['raced']} raced" if l.get("raced") else ""
    raced += f", {l['stalled']} stalled" if l.get("stalled") else ""
    return (f"{name} {kappa}, {pct(l['recall'])}, {pct(l['precision'])} "
            f"({l['kernel_imbalanced']} of {l['searches']}{raced}; "
            f"{pct(l['constant_agreement'])}, {pct(l['constant_precision'])})")


def table(files):
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for f in files:
        o = json.load(open(f))
        tot = o.get("model_total") or {}
        types = ", ".join(f"{t} {pct(c['agreement'], c['pairs'])}"
                          for t, c in sorted(tot.get("types", {}).items()))
        reasons = ", ".join(f"{r} {pct(c['agreement'], c['pairs'])}"
                            for r, c in sorted(o.get("reason_by_hook", {}).items()))
        scen = o["scenario"] + (" (kprobe)" if o.get("balancer_attach") == "kprobe" else "")
        row = [o["kernel"], o["topology"], scen, str(o["boot_s"]),
               "; ".join(level_cell(k, l) for k, l in sorted(o["model_per_level"].items())),
               f"{types or 'none'}; {pct(tot.get('type_constant_agreement'))}",
               f"{reasons or 'none'}; {pct(o.get('reason_constant_agreement'))}",
               ", ".join(f"{k} {v:.1%}" for k, v in o["idle_while_waiting_movable"].items()),
               "n/a" if o["runqlat_p99_us"] is None else f'{o["runqlat_p99_us"]:.0f}',
               ", ".join(f"{k} {n}" for k, n in sorted(o["findings"].items())) or "none",
               "; ".join(o.get("known_misses", [])) or "none"]
        print("| " + " | ".join(row) + " |")


def compare_row(o):
    """One run's agreement figures for the side-by-side table, each with its count."""
    rb = o.get("reason_by_hook", {})
    pairs = sum(c["pairs"] for c in rb.values())
    agree = sum(round(c["agreement"] * c["pairs"]) for c in rb.values())
    reason = (f"{agree / pairs:.1%} of {pairs}" if pairs else "n/a") + \
        f"; {pct(o.get('reason_constant_agreement'))}"
    levels = sorted(o.get("model_per_level", {}).items())
    kappa = ", ".join(f"{k} {'n/a' if l['kappa'] is None else format(l['kappa'], '.3f')} "
                      f"({l['searches']}; {pct(l['constant_agreement'])})" for k, l in levels)
    rp = ", ".join(f"{k} {pct(l['recall'])} of {l['kernel_imbalanced']} / "
                   f"{pct(l['precision'])} of {l['model_imbalanced']}" for k, l in levels)
    tot = o.get("model_total") or {}
    tp = sum(c["pairs"] for c in tot.get("types", {}).values())
    ta = sum(round(c["agreement"] * c["pairs"]) for c in tot.get("types", {}).values())
    types = (f"{ta / tp:.1%} of {tp}" if tp else "n/a") + \
        f"; {pct(tot.get('type_constant_agreement'))}"
    return [o.get("balancer_attach", "fentry"), reason, kappa, rp, types,
            "; ".join(o.get("known_misses", [])) or "none"]


def compare(files):
    """fentry and kprobe runs of the same kernel, topology and scenario, one row each."""
    runs = {}
    for fn in files:
        o = json.load(open(fn))
        runs.setdefault((o["kernel"], o["topology"], o["scenario"]), {})[
            o.get("balancer_attach", "fentry")] = o
    print("| kernel | topology | scenario | hooks | reason agreement (pairs; constant) | "
          "balanced / not: kappa per level (searches; constant agreement) | recall / precision "
          "per level | migration type (pairs; constant) | known misses |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, by in sorted(runs.items(), key=lambda kv: (kv[0][0] != "6.1", kv[0])):
        for kind in ("fentry", "kprobe"):
            if kind in by:
                print("| " + " | ".join(list(key) + compare_row(by[kind])) + " |")
    print(turned_by_line([o for by in runs.values() for o in by.values()]))
    print(sampled_line([o for by in runs.values() for o in by.values()]))


def sampled_line(runs):
    """The model's figures from the tracepoints' records alone, beside the ones judged: the
    balancer hooks send the run queue (PELT sums, task counts) of each CPU a search is about
    to read, and the goals are judged on those; the same searches answered from the
    tracepoints' records alone (PELT sampled every few ms or on a step, a stopped vCPU's
    records late) are what the model is worth where the hooks do not load. Pooled per level
    over `runs`, with the lowest kappa of a run of at least MIN_SEARCHES searches."""
    pooled = {}
    for o in runs:
        for key, field in (("from the searches", "model_per_level"),
                           ("from the records alone", "model_per_level_sampled")):
            for lvl, l in (o.get(field) or {}).items():
                p = pooled.setdefault(lvl, {}).setdefault(
                    key, {"n": 0, "agree": 0, "kappa": []})
                p["n"] += l["searches"]
                p["agree"] += round((l["agreement"] or 0) * l["searches"])
                if l["kappa"] is not None and l["searches"] >= MIN_SEARCHES:
                    p["kappa"].append(l["kappa"])
    each = []
    for lvl in sorted(pooled):
        parts = []
        for key, p in pooled[lvl].items():
            if not p["n"]:
                continue
            k = f", kappa from {min(p['kappa']):.3f}" if p["kappa"] else ""
            parts.append(f"{key} {100 * p['agree'] / p['n']:.2f}% of {p['n']}{k}")
        each.append(f"{lvl} " + "; ".join(parts))
    n = sum(o.get("model_pelt_at_search", 0) for o in runs)
    j = sum(o.get("model_stalled_judged", 0) for o in runs)
    return (f"lab: balanced-or-not from the run queues the searches sent ({n} records; the "
            f"goals are judged on these; {j} searches across a stopped vCPU judged) and from "
            f"the tracepoints' records alone (what the model has without the balancer hooks), "
            f"pooled: {' | '.join(each) or 'none'}")


def turned_by_line(runs):
    """The model's disagreements with the kernel over `runs`, by what turns each the kernel's
    way (report --validate): a change of the groups' PELT sums up to 5%, else one task more
    or fewer on a group, else neither."""
    order = ["0.5%", "1%", "2%", "5%", "one task", "neither", "not tried"]
    counts = {}
    for o in runs:
        for k, n in (o.get("model_disagreements_turned_by") or {}).items():
            by = k.split("/", 1)[1]
            counts[by] = counts.get(by, 0) + n
    total = sum(counts.values())
    each = ", ".join(f"{'PELT sums by ' + k if k.endswith('%') else k} {counts[k]}"
                     for k in sorted(counts, key=lambda k: order.index(k) if k in order else 99))
    return (f"lab: the model's {total} balanced-or-not disagreements with the kernel over "
            f"{len(runs)} runs, by what turns each the kernel's way: {each or 'none'}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--table", nargs="+", metavar="JSON")
    p.add_argument("--compare", nargs="+", metavar="JSON")
    p.add_argument("--failures", nargs="+", metavar="JSON")
    for a in ["kernel", "topology", "scenario", "console", "recording", "lbscope", "boot-s",
              "balancer-attach"]:
        p.add_argument("--" + a)
    a = p.parse_args()
    if a.table:
        table(a.table)
        return 0
    if a.compare:
        compare(a.compare)
        return 0
    if a.failures:
        for path in a.failures:
            d = json.load(open(path)) if os.path.exists(path) else {"failures": [
                f"no summary ({path})"], "kernel": "?", "topology": "?", "scenario": "?"}
            for msg in d.get("failures", []):
                print(f"lab: FAILED {d['kernel']} {d['topology']} {d['scenario']} "
                      f"({d.get('balancer_attach') or 'fentry'}): {msg}")
        return 0
    out, ok = summarize(a)
    out["failures"] = FAILURES
    line = json.dumps(out)
    with open(a.recording.rsplit(".", 1)[0] + ".json", "w") as f:
        f.write(line + "\n")
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
