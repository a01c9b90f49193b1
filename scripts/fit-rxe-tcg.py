#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fit-rxe-tcg.py [--write] [MIGBED]: the rxe-tcg hardware profile from scripts/measure-rxe.sh's data.

Reads docs/data/rxe-costs.txt (microbenchmarks in the VM) and docs/data/rxe-runs.csv (real
`migbed run --backend verbs` runs of the fixed trace docs/data/rxe-idle-256m.trace, wall clock).
1. Every key that a microbenchmark measures is set from it (the medians; see KEYS below).
2. docs/data/rxe-table.csv: each chunk size's median wall-clock total time; the FIT rows (1M, 64M)
   are fitted, the others (4M, 16M, 256M) held out.
3. `migbed calibrate --fit setup-ms` on the model, on the same trace: ONE key on two rows (a fit,
   not a match); it writes the profile.
4. Every row measured / predicted (`migbed run --hw FILE` on the model) / error.
With --write the profile goes to hw/rxe-tcg.hw and the table to docs/data/rxe-table.csv, else
to build/. Deterministic for the same data (the model and calibrate are)."""
import csv, json, os, re, statistics, subprocess, sys

FIT = ("1M", "64M")
TRACE = "docs/data/rxe-idle-256m.trace"
RUN = ["--trace", TRACE, "--max-bandwidth", "unlimited"]


def costs():
    kv = {}
    with open("docs/data/rxe-costs.txt") as f:
        for line in f:
            if "=" in line:
                k, v = line.split("=", 1)
                kv[k.strip()] = v.strip()
    return kv


def num(kv, k):
    return float(kv[k].split()[0])


def linfit(xs, ys):
    """least squares y = a + b x"""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def measured_keys(kv):
    sizes = [1, 4, 16, 64, 256]
    pages = [s * 256 for s in sizes]
    touched = [num(kv, f"reg-touched-{s}M-ns") for s in sizes]
    untouched = [num(kv, f"reg-untouched-{s}M-ns") for s in sizes]
    a_t, b_t = linfit(pages, touched)
    a_u, b_u = linfit(pages, untouched)
    bw = num(kv, "write-bw-2097152-mb-s")   # perftest MB/s (2^20 B)
    lat_poll = num(kv, "send-lat-poll-hog0-typical-us")
    lat_ev = num(kv, "send-lat-event-hog0-typical-us")
    lat_ev_hog = num(kv, "send-lat-event-hog1-typical-us")
    k = {
        # ib_write_bw at 2 MiB (migbed's merged write), MB/s -> Mb/s
        "link-mbps": round(bw * 1048576 * 8 / 1e6),
        # ib_send_lat, busy-polling: t_typical is half the median round trip
        "latency-ns": round(lat_poll * 1000),
        # ibv_reg_mr of touched memory against its pages: the intercept and the slope
        # (the line's intercept is within the noise of zero or below it: the 1 MiB median less
        # its 256 pages at the slope)
        "reg-fixed-ns": max(0, round(touched[0] - pages[0] * b_t)),
        "src-reg-ns-per-page": max(0, round(b_t)),
        # the destination pins memory nothing has touched: every page faults in and is zeroed
        "dst-reg-ns-per-page": max(0, round(b_u)),
        # the model charges zero-fill for the all-zero (never-written) pages of a chunk; in the
        # verbs run those are the source's holes, also never touched (lazy mmap): the difference
        "dst-zero-fill-ns-per-page": max(0, round(b_u - b_t)),
        "dereg-fixed-ns": round(num(kv, "dereg-1M-ns")),
        # a blocking wait: ib_send_lat -e minus busy-polling (one wake-up per half round trip);
        # migbed's verbs backend sleeps on the completion channel in every wait
        "wait-running-us": max(0, round(lat_ev - lat_poll)),
        "wait-stopped-us": max(0, round(lat_ev - lat_poll)),
    }
    notes = {
        "touched": (a_t, b_t), "untouched": (a_u, b_u), "bw": bw,
        "lat": (lat_poll, lat_ev, lat_ev_hog),
    }
    return k, notes


def runs_table():
    rows = {}
    with open("docs/data/rxe-runs.csv") as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["chunk-size"], []).append(float(r["wall-ms"]))
    order = sorted(rows, key=lambda c: int(c[:-1]) * (1024 if c.endswith("G") else 1))
    return [(c, statistics.median(rows[c]), rows[c]) for c in order]


def model_ms(migbed, hw, chunk):
    out = subprocess.run([migbed, "run", *RUN, "--chunk-size", chunk, "--hw", hw, "--json", "-"],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)["metrics"]
    return j["total-time"], j["ram"]["transferred"]


def main():
    write = "--write" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--write"]
    migbed = args[0] if args else "build/migbed"
    kv = costs()
    keys, notes = measured_keys(kv)
    os.makedirs("build", exist_ok=True)
    table = "docs/data/rxe-table.csv" if write else "build/rxe-table.csv"
    prof = "hw/rxe-tcg.hw" if write else "build/rxe-tcg.hw"
    rows = runs_table()
    with open(table + ".tmp", "w") as f:
        f.write("# Real `migbed run --backend verbs` runs on soft-RoCE in the TCG VM (docs/model.md, 'rxe-tcg'):\n"
                "# the trace docs/data/rxe-idle-256m.trace (256 MiB, idle, 50 % non-zero layout), --max-bandwidth\n"
                "# unlimited; total-time-ms = the median wall-clock total time of the runs in docs/data/rxe-runs.csv\n"
                "# (scripts/measure-rxe.sh, " + kv.get("date", "?") + "). fit: 1 = fitted (scripts/fit-rxe-tcg.py),\n"
                "# 0 = held out, predicted.\n")
        f.write("chunk-size,total-time-ms,fit\n")
        for c, ms, _ in rows:
            f.write(f"{c},{round(ms)},{1 if c in FIT else 0}\n")
    os.replace(table + ".tmp", table)
    base = prof + ".base"
    with open(base, "w") as f:
        f.write("description = soft-RoCE (rdma_rxe) in the TCG VM, measured (scripts/measure-rxe.sh)\n")
        f.write("reference = docs/model.md, rxe-tcg\n")
        for k, v in keys.items():
            f.write(f"{k} = {v}\n")
        f.write("setup-ms = 1000\n")
    cal = subprocess.run([migbed, "calibrate", "--table", table, "--fit", "setup-ms", "-o", prof + ".fit",
                          "--max-evals", "60", *RUN, "--hw", base], capture_output=True, text=True)
    sys.stdout.write(cal.stdout)
    sys.stderr.write(cal.stderr)
    if cal.returncode:
        sys.exit(cal.returncode)
    setup = None
    with open(prof + ".fit") as f:
        for line in f:
            m = re.match(r"setup-ms = (\d+)", line)
            if m:
                setup = int(m.group(1))
    src = {
        "link-mbps": f"ib_write_bw rxe1->rxe0, 2 MiB messages: {notes['bw']:.1f} MB/s",
        "latency-ns": f"ib_send_lat 64 B, busy-polling: t_typical {notes['lat'][0]:.1f} us (half the median round trip)",
        "reg-fixed-ns": f"ibv_reg_mr of touched memory: the 1 MiB median less 256 pages at the slope below (the 1M..256M line's own intercept is {notes['touched'][0]:.0f} ns: noise)",
        "src-reg-ns-per-page": f"the same line's slope per 4 KiB page ({notes['touched'][1]:.1f} ns)",
        "dst-reg-ns-per-page": f"ibv_reg_mr of never-touched memory, 1M..256M: slope per page ({notes['untouched'][1]:.0f} ns; fault-in + zero-fill + pin)",
        "dst-zero-fill-ns-per-page": "never-touched minus touched slope: the verbs run's source holes (lazy mmap) fault in too",
        "dereg-fixed-ns": "ibv_dereg_mr of 1 MiB, median",
        "wait-running-us": f"ib_send_lat -e minus busy-polling t_typical ({notes['lat'][1]:.0f} - {notes['lat'][0]:.0f} us): one wake-up on the completion channel",
        "wait-stopped-us": "= wait-running-us: the verbs run's guest is simulated, its waits are the same wake-ups",
        "setup-ms": f"FITTED by migbed calibrate --fit setup-ms on the {' and '.join(FIT)} rows of docs/data/rxe-table.csv (the process's own constant costs: guest memory, trace, connection, verification)",
    }
    with open(prof + ".tmp", "w") as f:
        f.write("# rxe-tcg - soft-RoCE (rdma_rxe) in the TCG VM (topologies/vm/rxe-vm), measured by\n"
                f"# scripts/measure-rxe.sh ({kv.get('date', '?')}; {kv.get('host-load-before', '?')});\n"
                "# docs/data/rxe-costs.txt, fitted by scripts/fit-rxe-tcg.py --write. docs/model.md, 'rxe-tcg'.\n")
        f.write("description = soft-RoCE (rdma_rxe) in the TCG VM, measured; setup-ms fitted on 2 chunk sizes\n")
        f.write("reference = docs/model.md, rxe-tcg: docs/data/rxe-costs.txt (microbenchmarks), docs/data/rxe-table.csv (verbs runs); scripts/fit-rxe-tcg.py\n")
        for k, v in list(keys.items()) + [("setup-ms", setup)]:
            f.write(f"# {src[k]}\n{k} = {v}\n")
    os.replace(prof + ".tmp", prof)
    for p in (base, prof + ".fit"):
        os.remove(p)
    print(f"\n{prof}:")
    print("| chunk | measured (median wall) | runs | model (--hw rxe-tcg) | error | role |")
    print("|---|---|---|---|---|---|")
    for c, ms, all_ms in rows:
        t, tr = model_ms(migbed, prof, c)
        print(f"| {c} | {ms / 1000:.2f} s | {', '.join(f'{x / 1000:.2f}' for x in all_ms)} | {t / 1000:.2f} s "
              f"| {100 * (t - ms) / ms:+.0f} % | {'fitted' if c in FIT else 'predicted'} |")


if __name__ == "__main__":
    main()
