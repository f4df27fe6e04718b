#!/usr/bin/env python3
"""Turns one lab boot (serial console log and recording) into the lab's JSON line or a
Markdown table row, and fails when the balancer hook expected on the kernel did not load."""
import argparse
import json
import re
import subprocess
import sys

# The balancer entry point each kernel must accept as fentry in the lab guests.
EXPECTED_HOOK = {"6.1": "load_balance", "6.12": "sched_balance_rq"}
COLUMNS = ["kernel", "topology", "scenario", "boot s", "domains", "hooks", "migrations",
           "balancer migrations", "reason agreement", "model agreement", "Balance events",
           "Balance events per sd level",
           "idle-while-others-wait (movable) per level", "runqlat p99 us", "findings"]
BALANCER_REASONS = ["periodic_balance", "nohz_idle_balance", "newidle_balance", "active_balance"]


def between(text, name):
    m = re.search(rf"^LAB-{name}-BEGIN\n(.*?)^LAB-{name}-END$", text, re.S | re.M)
    return m.group(1) if m else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--header", action="store_true")
    for a in ["kernel", "topology", "scenario", "console", "recording", "lbscope", "boot-s", "mode"]:
        p.add_argument("--" + a)
    a = p.parse_args()
    if a.header:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        return 0
    text = open(a.console, errors="replace").read().replace("\r", "")
    doctor = between(text, "DOCTOR")
    checks = []
    if doctor:
        try:
            checks = json.loads(doctor.strip().splitlines()[-1])
        except (ValueError, IndexError):
            checks = []
    loaded = sorted(c["item"].split("/", 1)[1] for c in checks
                    if c["item"].startswith("hook fentry/") and c["detail"] == "loads")
    domains = (between(text, "DOMAINS") or "").split()
    out = {"kernel": a.kernel, "topology": a.topology, "scenario": a.scenario,
           "balancer_hooks": EXPECTED_HOOK.get(a.kernel) in loaded,
           "hooks_loaded": loaded, "domains": domains, "migrations": None,
           "balancer_migrations": None, "migrations_by_reason": None,
           "reason_agreement": None, "model_balanced_agreement": None,
           "model_migration_type_agreement": None, "findings": {},
           "idle_while_waiting_movable": None, "runqlat_p99_us": None,
           "recording": a.recording, "boot_s": round(float(a.boot_s), 1)}
    ok = True
    # One pass: the intervals, then the validation line (the kernel's decisions vs the model's).
    rep = subprocess.run([a.lbscope, "report", a.recording, "-i", "100000", "--json",
                          "--validate"], capture_output=True, text=True)
    lines = [json.loads(line) for line in rep.stdout.splitlines() if line.startswith("{")]
    snaps = [x for x in lines if "validation" not in x]
    last = [x["validation"] for x in lines if "validation" in x]
    if not snaps:
        print(f"lab: {a.kernel} {a.topology} {a.scenario}: no readable recording "
              f"({rep.stderr.strip()[:200]}); console in {a.console}", file=sys.stderr)
        ok = False
    else:
        mig = {"total": 0, "by_reason": {}}
        p99 = 0.0
        iww = {}
        for s in snaps:
            mig["total"] += s["migrations"]["total"]
            for r, n in s["migrations"]["by_reason"].items():
                mig["by_reason"][r] = mig["by_reason"].get(r, 0) + n
            p99 = max(p99, s["runqlat_us"]["p99"])
            for w in s.get("idle_while_waiting", []):
                iww[w["level"]] = round(max(iww.get(w["level"], 0.0), w["movable_fraction"]), 4)
        out["migrations"] = mig["total"]
        out["migrations_by_reason"] = mig["by_reason"]
        out["balancer_migrations"] = sum(mig["by_reason"].get(r, 0) for r in BALANCER_REASONS)
        out["runqlat_p99_us"] = p99
        out["idle_while_waiting_movable"] = iww
        for s in snaps:
            for k, n in s.get("findings_by_kind", {}).items():
                if n:
                    out["findings"][k] = out["findings"].get(k, 0) + n
    if last:
        v = last[-1]
        out["reason_agreement"] = v["reason_agreement"]
        out["reason_matched"] = v["reasons"]["matched"]
        out["model_balanced_agreement"] = v["balanced_agreement"]
        out["model_migration_type_agreement"] = v["migration_type_agreement"]
        out["model_decisions"] = v["total"]["decisions"]
        out["model_both_unbalanced"] = v["total"]["both_unbalanced"]
        out["model_per_level"] = {k: {"decisions": l["decisions"],
                                      "balanced_agreement": round(l["balanced_agree"] / l["decisions"], 4)
                                      if l["decisions"] else None}
                                  for k, l in v["per_level"].items()}
        out["balance_events"] = v["balance_events"]
        out["balance_levels"] = v["balance_events_per_sd_level"]
    else:
        print(f"lab: {a.kernel} {a.topology} {a.scenario}: no validation "
              f"({rep.stderr.strip()[:200]})", file=sys.stderr)
        ok = False
    if not out["balancer_hooks"]:
        print(f"lab: {a.kernel}: fentry/{EXPECTED_HOOK.get(a.kernel)} did not load "
              f"(loaded: {loaded or 'none'})", file=sys.stderr)
        ok = False
    with open(a.recording.rsplit(".", 1)[0] + ".json", "w") as f:
        f.write(json.dumps(out) + "\n")
    if a.mode == "readme":
        cell = lambda v: "n/a" if v is None else str(v)
        row = [a.kernel, a.topology, a.scenario, cell(out["boot_s"]), " ".join(domains),
               ", ".join(loaded) or "none", cell(out["migrations"]),
               cell(out["balancer_migrations"]),
               cell(out["reason_agreement"]) + f' ({out.get("reason_matched", 0)} matched)',
               f'balanced {cell(out["model_balanced_agreement"])} of {out.get("model_decisions", 0)}, '
               f'type {cell(out["model_migration_type_agreement"])} of {out.get("model_both_unbalanced", 0)}', cell(out.get("balance_events")), cell(out.get("balance_levels")),
               ", ".join(f"{k} {v:.1%}" for k, v in (out["idle_while_waiting_movable"] or {}).items()),
               cell(out["runqlat_p99_us"]),
               ", ".join(f"{k} {n}" for k, n in out["findings"].items()) or "none"]
        print("| " + " | ".join(row) + " |")
    else:
        print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
