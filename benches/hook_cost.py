#!/usr/bin/env python3
"""What the planner hook costs a server that does not use snowflake_id.

Loading the library installs a planner hook in every backend, so every
query on the server pays for it, in every database, whether or not the
extension is installed there. This measures that toll where it is largest
relative to the work: pgbench's select-only script in simple protocol (one
parse, plan and execute per transaction), with the library preloaded and
without it, on one throwaway cluster restarted between runs.

Runs alternate A B B A A B B A ... so that a slow drift of the machine hits
both alike; each run starts from a restarted server with the pgbench tables
prewarmed into shared buffers. Two figures: the difference of the median
TPS (what a user sees, but on a shared machine other work moves it by far
more than 1%), and the difference of the median server CPU time per
transaction (the backends' user + system time, which the postmaster collects
when they exit, divided by the transactions), which other load hardly moves.

Usage: hook_cost.py LIBRARY [--runs N] [--seconds S] [--ir-only] [--no-docs]
LIBRARY is the snowflake_id.so to preload, by absolute path (a private
build, alone in its directory, which goes first in dynamic_library_path:
the system's installed copy is not touched, and no database runs CREATE
EXTENSION). benches/hook_cost.sh builds one and calls this.
"""

import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- hook-cost: begin (benches/hook_cost.sh) -->", "<!-- hook-cost: end -->"
PORT = 54410
SCALE = 10
CLIENTS = 2


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def as_postgres(*args):
    return ["runuser", "-u", "postgres", "--", *map(str, args)]


class Cluster:
    def __init__(self, library):
        self.library = library
        self.dir = Path(tempfile.mkdtemp(prefix="snowflake_id_hook."))
        os.chmod(self.dir, 0o777)
        self.data = self.dir / "data"
        run(as_postgres(BIN / "initdb", "-D", self.data, "-A", "trust", "--no-sync"))
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(
                f"port = {PORT}\nunix_socket_directories = '{self.dir}'\nlisten_addresses = ''\n"
                "shared_buffers = 512MB\nmax_connections = 20\njit = off\n"
                "snowflake_id.worker_id = 1\ninclude = 'mode.conf'\n"
            )
        self.running = False

    def start(self, preload):
        # By name, found first in the library's own directory: the mark
        # keeper's process loads "snowflake_id" by name too, and must get the
        # same file (a second copy would register the settings twice).
        mode = self.data / "mode.conf"
        mode.write_text(f"shared_preload_libraries = '{'snowflake_id' if preload else ''}'\n"
                        f"dynamic_library_path = '{self.library.parent}:$libdir'\n")
        os.chmod(mode, 0o644)
        run(as_postgres(BIN / "pg_ctl", "-D", self.data, "-l", self.dir / "server.log", "-w", "start"))
        self.running = True

    def stop(self):
        if self.running:
            subprocess.run(as_postgres(BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"),
                           capture_output=True)
            self.running = False

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def conn_args(self):
        return ["-h", str(self.dir), "-p", str(PORT)]

    def sql(self, sql):
        return run(as_postgres(BIN / "psql", *self.conn_args(), "-d", "postgres", "-X", "-At",
                               "-v", "ON_ERROR_STOP=1", "-c", sql)).stdout.strip()

    def pgbench(self, *args):
        return run(as_postgres(BIN / "pgbench", *self.conn_args(), *args, "postgres")).stdout


    def postmaster_pid(self):
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def children_cpu_seconds(self):
        """User + system time of the postmaster's exited (reaped) children."""
        fields = Path(f"/proc/{self.postmaster_pid()}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime

    def settled_children_cpu_seconds(self):
        """The same, once no client backend is left to exit."""
        for _ in range(100):
            if self.sql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'") == "1":
                break
            time.sleep(0.1)
        time.sleep(0.3)  # the psql backend above exits too
        return self.children_cpu_seconds()


def one_run(cluster, preload, seconds):
    """TPS and server CPU microseconds per transaction of one run."""
    cluster.start(preload)
    try:
        loaded = cluster.sql("SHOW shared_preload_libraries") != ""
        assert loaded == preload, "the library was not (un)loaded as asked"
        if preload:
            # The copy asked for, and its mark keeper running (not restarting).
            path = f"{cluster.library}"
            assert path in Path(f"/proc/{cluster.postmaster_pid()}/maps").read_text(), "another copy was loaded"
            time.sleep(1)
            assert "attempt to redefine" not in (cluster.dir / "server.log").read_text(), "a second copy was loaded"
        cluster.sql("SELECT pg_prewarm(c) FROM unnest(ARRAY['pgbench_accounts', 'pgbench_accounts_pkey',"
                    " 'pgbench_branches', 'pgbench_tellers']::regclass[]) c")
        cluster.pgbench("-n", "-S", "-M", "simple", "-c", CLIENTS, "-j", CLIENTS, "-T", 2)  # warm the OS and CPU caches
        cpu_before = cluster.settled_children_cpu_seconds()
        out = cluster.pgbench("-n", "-S", "-M", "simple", "-c", CLIENTS, "-j", CLIENTS, "-T", seconds)
        cpu = cluster.settled_children_cpu_seconds() - cpu_before
        transactions = int(re.search(r"number of transactions actually processed: ([0-9]+)", out).group(1))
        return float(re.search(r"tps = ([0-9.]+)", out).group(1)), cpu * 1e6 / transactions
    finally:
        cluster.stop()


def select_only(queries):
    return "".join(f"SELECT abalance FROM pgbench_accounts WHERE aid = {1 + (i * 7919) % (SCALE * 100000)};\n"
                   for i in range(queries))


def in_list(queries):
    values = ",".join(str(i) for i in range(1, IN_LIST + 1))
    return f"EXPLAIN (COSTS OFF) SELECT 1 FROM pgbench_branches WHERE bid IN ({values});\n" * queries


def instructions(cluster, preload, script, db="postgres"):
    """Instructions a single-user backend executes for `script` (each
    statement parsed, planned and run), counted by valgrind: exact and
    untouched by other work on the machine, unlike any timing here."""
    mode = cluster.data / "mode.conf"
    mode.write_text(f"shared_preload_libraries = '{'snowflake_id' if preload else ''}'\n"
                    f"dynamic_library_path = '{cluster.library.parent}:$libdir'\n")
    out = subprocess.run(
        as_postgres("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                    BIN / "postgres", "--single", "-D", cluster.data, db),
        input=script, capture_output=True, text=True, check=True)
    return int(re.search(r"I\s+refs:\s+([0-9,]+)", out.stderr).group(1).replace(",", ""))


def instructions_per_query(cluster, preload, make=select_only, small=2000, large=12000, db="postgres"):
    """The difference of two run lengths: startup and shutdown cancel out."""
    return ((instructions(cluster, preload, make(large), db) - instructions(cluster, preload, make(small), db))
            / (large - small))


IN_LIST = 100_000


def in_list_planning_ms(cluster, preload, repetitions):
    """Median planning time (EXPLAIN's "Planning Time") of a query with an
    IN list of IN_LIST constants, in a database without the extension and in
    one with it (`snowflake_ext`, where the hook also looks for decoders).
    The hook walks every node of the query; a long IN list is the biggest
    tree a user commonly writes."""
    cluster.start(preload)
    try:
        values = ",".join(str(i) for i in range(1, IN_LIST + 1))
        statement = f"EXPLAIN (SUMMARY ON, COSTS OFF) SELECT 1 FROM pgbench_branches WHERE bid IN ({values});\n"
        medians = {}
        for db in ("postgres", "snowflake_ext"):
            script = statement * (repetitions + 3)
            out = run(as_postgres(BIN / "psql", *cluster.conn_args(), "-d", db, "-X", "-At", "-v", "ON_ERROR_STOP=1"),
                      input=script).stdout
            times = [float(t) for t in re.findall(r"Planning Time: ([0-9.]+) ms", out)][3:]
            assert len(times) == repetitions, out[-2000:]
            medians[db] = statistics.median(times)
        return medians
    finally:
        cluster.stop()


def machine():
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def write_section(text):
    old = REPORT.read_text() if REPORT.exists() else "# Benchmarks\n"
    section = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + section + old[old.index(END) + len(END) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + section
    REPORT.write_text(new)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--runs", type=int, default=5, help="runs per configuration")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--label", default="", help="what build this is, for the report")
    ap.add_argument("--ir-only", action="store_true", help="only count instructions (no pgbench runs, no report)")
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--in-list-repetitions", type=int, default=15)
    args = ap.parse_args()
    library = Path(args.library).resolve()
    assert library.is_file(), library

    cluster = Cluster(library)
    try:
        cluster.start(False)
        cluster.sql("CREATE EXTENSION pg_prewarm")
        cluster.pgbench("-i", "-q", "-s", SCALE)
        # A database with the extension, for the IN-list planning figures
        # (created without the preload: decoding needs none).
        cluster.sql("CREATE DATABASE snowflake_ext TEMPLATE postgres")
        run(as_postgres(BIN / "psql", *cluster.conn_args(), "-d", "snowflake_ext", "-X", "-c",
                        "CREATE EXTENSION snowflake_id"))
        version = cluster.sql("SELECT version()").split(",")[0]
        cluster.stop()
        tps = {False: [], True: []}
        cpu = {False: [], True: []}
        if args.ir_only:
            order = []
        else:
            # A B B A A B B A ...: a linear drift of the machine cancels out.
            order = [(i % 4) in (1, 2) for i in range(2 * args.runs)]
        for i, preload in enumerate(order):
            t, c = one_run(cluster, preload, args.seconds)
            tps[preload].append(t)
            cpu[preload].append(c)
            print(f"run {i + 1:2}/{len(order)}: {'preloaded' if preload else 'not loaded'}: {t:,.0f} tps, "
                  f"{c:.2f} us server CPU per transaction, load average {os.getloadavg()[0]:.1f}", flush=True)
        planning = {False: {"postgres": [], "snowflake_ext": []}, True: {"postgres": [], "snowflake_ext": []}}
        for preload in [] if args.ir_only else [False, True, True, False, False, True]:
            for db, ms in in_list_planning_ms(cluster, preload, args.in_list_repetitions).items():
                planning[preload][db].append(ms)
            print(f"IN list of {IN_LIST:,}: {'preloaded' if preload else 'not loaded'}: "
                  f"{planning[preload]['postgres'][-1]:.2f} ms planning, "
                  f"{planning[preload]['snowflake_ext'][-1]:.2f} ms with the extension", flush=True)
        ir = {preload: instructions_per_query(cluster, preload) for preload in (False, True)}
        print(f"instructions per statement: not loaded {ir[False]:,.0f}, preloaded {ir[True]:,.0f}", flush=True)
        ir_in = {(False, "postgres"): instructions_per_query(cluster, False, in_list, 1, 3)}
        for db in ("postgres", "snowflake_ext"):
            ir_in[(True, db)] = instructions_per_query(cluster, True, in_list, 1, 3, db)
        print("instructions per IN-list EXPLAIN (parse and plan): " +
              ", ".join(f"{'preloaded' if p else 'not loaded'} in {db} {n:,.0f}" for (p, db), n in ir_in.items()),
              flush=True)
    finally:
        cluster.remove()
    if args.ir_only:
        return 0

    off, on = statistics.median(tps[False]), statistics.median(tps[True])
    cost = (off - on) / off
    spread = max((max(v) - min(v)) / statistics.median(v) for v in tps.values())
    cpu_off, cpu_on = statistics.median(cpu[False]), statistics.median(cpu[True])
    cpu_spread = max((max(v) - min(v)) / statistics.median(v) for v in cpu.values())
    lines = [
        "## 7. The planner hook's toll on a server that does not use the extension",
        "",
        f"Run on {datetime.date.today().isoformat()} by `bash benches/hook_cost.sh`"
        + (f" ({args.label})" if args.label else "") + ".",
        f"Machine: {machine()}. Server: {version}, release build of snowflake_id preloaded "
        "(no `CREATE EXTENSION` anywhere), or not loaded at all.",
        f"`pgbench -S -M simple -c {CLIENTS} -j {CLIENTS} -T {args.seconds}` (select-only, one parse and plan per "
        f"transaction), scale {SCALE}, tables prewarmed; the server restarted before every run; "
        f"{args.runs} runs each, alternating A B B A.",
        "",
        "| library | runs: tps | median tps | runs: server CPU µs per transaction | median CPU µs |",
        "|---|---|---:|---|---:|",
        f"| not loaded | {', '.join(f'{t:,.0f}' for t in tps[False])} | {off:,.0f} | "
        f"{', '.join(f'{c:.2f}' for c in cpu[False])} | {cpu_off:.2f} |",
        f"| preloaded | {', '.join(f'{t:,.0f}' for t in tps[True])} | {on:,.0f} | "
        f"{', '.join(f'{c:.2f}' for c in cpu[True])} | {cpu_on:.2f} |",
        "",
        f"TPS: {-cost:+.2%} with the library preloaded (runs within one configuration spread over up to "
        f"{spread:.1%}: with other work on the machine, TPS differences below that are noise).",
        f"Server CPU per transaction: {cpu_on - cpu_off:+.2f} µs, {(cpu_on - cpu_off) / cpu_off:+.2%} "
        f"(spread up to {cpu_spread:.1%}; on a busy 2-core machine other processes slow this one too).",
        "",
        "Instructions per statement, counted by valgrind (cachegrind) in a single-user backend running the same "
        "select-only statement 2,000 and 12,000 times (the difference of the two, so start and stop cancel out); "
        "exact where the timings above are not:",
        "",
        "| library | instructions per statement | the hook's toll |",
        "|---|---:|---:|",
        f"| not loaded | {ir[False]:,.0f} | – |",
        f"| preloaded | {ir[True]:,.0f} | {ir[True] - ir[False]:+,.0f} ({(ir[True] - ir[False]) / ir[False]:+.2%}) |",
        "",
        "A single-user backend has no client protocol, so the share is larger than under pgbench: an upper bound. "
        "Since 0.4.0 the hook walks every query in every database (0.3.0 skipped the walk where the extension was "
        "not installed, +171 instructions, at the price of a `pg_extension` lookup under a lock at each session's "
        "first query); the walk allocates nothing for a query of up to 64 pending nodes.",
        "",
        f"Planning a query with an IN list of {IN_LIST:,} constants "
        "(`EXPLAIN (SUMMARY ON) SELECT 1 FROM pgbench_branches WHERE bid IN (1, 2, ...)`, the planner's own "
        f"\"Planning Time\"), median of {args.in_list_repetitions} plans per server start, three starts each, "
        "alternating; the hook walks every node of a query, and this is the largest tree users commonly write:",
        "",
        "| library | database | planning ms (per start) | median | vs not loaded |",
        "|---|---|---|---:|---:|",
    ]
    base = statistics.median(planning[False]["postgres"])
    for preload, db, label in ((False, "postgres", "without the extension"),
                               (True, "postgres", "without the extension"),
                               (True, "snowflake_ext", "with the extension")):
        v = planning[preload][db]
        m = statistics.median(v)
        lines.append(f"| {'preloaded' if preload else 'not loaded'} | {label} | "
                     f"{', '.join(f'{x:.2f}' for x in v)} | {m:.2f} | {(m - base) / base:+.1%} |")
    base_ir = ir_in[(False, "postgres")]
    lines += [
        "",
        "The same statement's instructions (parse and plan, counted by valgrind in a single-user backend, the "
        "difference of 3 and 1 statements): exact, where the timings move with the machine's load:",
        "",
        "| library | database | instructions per statement | the hook's toll |",
        "|---|---|---:|---:|",
        f"| not loaded | without the extension | {base_ir:,.0f} | – |",
    ]
    for db, label in (("postgres", "without the extension"), ("snowflake_ext", "with the extension")):
        n = ir_in[(True, db)]
        lines.append(f"| preloaded | {label} | {n:,.0f} | {n - base_ir:+,.0f} ({(n - base_ir) / base_ir:+.2%}) |")
    lines += ["", "Target: planning within 5% of the time without the library."]
    text = "\n".join(lines)
    print(text)
    if not args.no_docs:
        write_section(text)


if __name__ == "__main__":
    sys.exit(main())
