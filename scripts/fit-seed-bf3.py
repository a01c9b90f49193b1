#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fit-seed-bf3.py [MIGBED]: fit hw/cx7-bf3.hw's two free keys to the seed table (docs/model.md).

The free keys: wait-running-us (the cost of a blocking control wait with the guest running, which
sets the per-chunk slope: the 1M row) and dst-zero-fill-ns-per-page (the destination's fault-in and
zero-fill of never-touched pages, which sets the per-byte cost of pinning: the 1G row). Every other
key is the profile's fixed value. The rows with fit=1 in docs/data/seed-table.csv are fitted, each
row's total time; the model is near linear in both keys, so the fit is a few rounds of a 2x2
linear solve from finite differences (bounded: ROUNDS), deterministic (the model is, and the
values are rounded to whole units). Prints the values and every row's measured, model and error;
with --write, writes them into hw/cx7-bf3.hw (via .tmp, renamed)."""
import csv, json, os, subprocess, sys, tempfile

ROUNDS = 4
KEYS = ("wait-running-us", "dst-zero-fill-ns-per-page")
SCN = "bats/scenarios/seed-bf3.scn"
PROFILE = "hw/cx7-bf3.hw"


def table():
    with open("docs/data/seed-table.csv") as f:
        rows = [r for r in csv.DictReader(l for l in f if not l.startswith("#"))]
    return rows


def run(migbed, chunk, vals):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        cmd = [migbed, "run", SCN, "--chunk-size", chunk, "--quiet", "--json", out]
        for k, v in zip(KEYS, vals):
            cmd += ["--hw-set", "%s=%d" % (k, v)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            m = json.load(f)["metrics"]
    return m


def times(migbed, rows, vals):
    return [run(migbed, r["chunk-size"], vals)["total-time"] for r in rows]


def solve(migbed, fit, start):
    vals = list(start)
    for _ in range(ROUNDS):
        t0 = times(migbed, fit, vals)
        steps = [max(1, v // 10) for v in vals]
        cols = []
        for i in range(2):
            v = list(vals)
            v[i] += steps[i]
            ti = times(migbed, fit, v)
            cols.append([(a - b) / steps[i] for a, b in zip(ti, t0)])
        # t0 + J d = measured, J[row][key] = cols[key][row]
        r = [float(x["total-time-ms"]) - t for x, t in zip(fit, t0)]
        a, b, c, d = cols[0][0], cols[1][0], cols[0][1], cols[1][1]
        det = a * d - b * c
        if det == 0:
            break
        d0 = (r[0] * d - b * r[1]) / det
        d1 = (a * r[1] - c * r[0]) / det
        new = [max(0, round(vals[0] + d0)), max(0, round(vals[1] + d1))]
        if new == vals:
            break
        vals = new
    return vals


def main():
    migbed = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build/migbed"
    rows = table()
    fit = [r for r in rows if r["fit"] == "1"]
    vals = solve(migbed, fit, [1000, 1000])
    print("fitted: %s = %d, %s = %d (on %d rows: %s)" % (KEYS[0], vals[0], KEYS[1], vals[1], len(fit),
          ", ".join(r["chunk-size"] for r in fit)))
    print("| chunk | total s measured | model | error | Mb/s measured | model | error | in the fit |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = run(migbed, r["chunk-size"], vals)
        tm, tx = float(r["total-time-ms"]), m["total-time"]
        bm, bx = float(r["mbps"]), m["ram"]["mbps"]
        print("| %s | %.3f | %.3f | %+.0f %% | %s | %.0f | %+.0f %% | %s |" % (
            r["chunk-size"], tm / 1000, tx / 1000, 100 * (tx - tm) / tm, r["mbps"], bx, 100 * (bx - bm) / bm,
            "yes" if r["fit"] == "1" else "no"))
    if "--write" in sys.argv:
        with open(PROFILE) as f:
            lines = f.read().splitlines()
        out = []
        for l in lines:
            k = l.split("=")[0].strip()
            if k in KEYS:
                l = "%s = %d" % (k, vals[KEYS.index(k)])
            out.append(l)
        with open(PROFILE + ".tmp", "w") as f:
            f.write("\n".join(out) + "\n")
        os.rename(PROFILE + ".tmp", PROFILE)
        print("wrote", PROFILE)


main()
