#!/usr/bin/env python3
"""Side-by-side benchmark of ID generators on one throwaway server.

Every figure is the median of several repetitions, and the generators are
interleaved within each repetition so that the machine's noise hits them
alike. Ratios against nextval() are the figures to read: absolute numbers
move with the machine.
"""

import datetime
import hashlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", 3 if QUICK else 5))
# BENCH_PORT: another port, when a session beside uses the default one.
PORT = int(os.environ.get("BENCH_PORT", "54400"))
CEILING_PER_MS = 4096  # 2^12 with the default layout

def write_section(begin, end, section):
    """Puts `section` (which starts with `begin` and ends with `end`) in
    docs/benchmarks.md in place of the text between those markers, or at
    the end when they are not there yet: each benchmark rewrites its own
    section and leaves the others, and the prose around them, as they are."""
    path = DOCS / "benchmarks.md"
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        new = old[: old.index(begin)] + section + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(new)


GENERATORS = {  # name -> SQL expression
    "loop (floor)": "g",
    "nextval('seq')": "nextval('seq')",
    "snowflake_nextval()": "snowflake_nextval()",
    "gen_random_uuid()": "gen_random_uuid()",
}
TABLES = {  # generator -> (table, column type and default)
    "bigserial": ("t_serial", "bigserial"),
    "snowflake": ("t_snowflake", "bigint DEFAULT snowflake_nextval()"),
    "uuid v4": ("t_uuid", "uuid DEFAULT gen_random_uuid()"),
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class Server:
    def __init__(self, bin_dir=None, port=None, conf=None):
        """`conf` replaces the preload and worker id lines (a registry's own
        server has no preload; a node with a registry has no worker id)."""
        global BIN
        BIN = Path(bin_dir) if bin_dir else BIN
        self.port = port or PORT
        if conf is None:
            conf = "shared_preload_libraries = 'snowflake_id'\nsnowflake_id.worker_id = 1\n"
        self.dir = Path(tempfile.mkdtemp(prefix="snowflake_id_bench."))
        os.chmod(self.dir, 0o777)
        self.data = self.dir / "data"
        run(["runuser", "-u", "postgres", "--", str(BIN / "initdb"), "-D", str(self.data), "-A", "trust"])
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(
                f"port = {self.port}\nunix_socket_directories = '{self.dir}'\nlisten_addresses = ''\n"
                + conf
                + "shared_buffers = 512MB\nmax_wal_size = 4GB\nmax_connections = 60\n"
                "max_parallel_workers_per_gather = 0\n"
                # JIT compiles each big statement for a few hundred ms, which the
                # bulk figures would spread over the rows of every generator alike.
                "jit = off\n"
            )
        run(["runuser", "-u", "postgres", "--", str(BIN / "pg_ctl"), "-D", str(self.data),
             "-l", str(self.dir / "server.log"), "-w", "start"])

    def stop(self):
        subprocess.run(["runuser", "-u", "postgres", "--", str(BIN / "pg_ctl"), "-D", str(self.data),
                        "-m", "fast", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def psql_args(self):
        return ["runuser", "-u", "postgres", "--", str(BIN / "psql"), "-h", str(self.dir), "-p", str(self.port),
                "-d", "postgres", "-X", "-q", "-v", "ON_ERROR_STOP=1"]

    def sql(self, sql):
        return run(self.psql_args() + ["-At", "-c", sql]).stdout.strip()

    def timed(self, sql, setup=""):
        """Server-side milliseconds of one statement, via psql's \\timing."""
        script = f"{setup}\n\\timing on\n{sql};\n"
        out = run(self.psql_args(), input=script).stdout
        times = re.findall(r"Time: ([0-9.]+) ms", out)
        return float(times[-1])

    def cpu_timed(self, sql):
        """Milliseconds of CPU the backend spent on one statement, from
        /proc/PID/schedstat (time on a CPU, in ns) read by psql right before
        and after it. On a shared machine the wall clock also counts the
        time the backend waited for a CPU other processes held; this does not."""
        script = ("SELECT pg_backend_pid() AS pid \\gset\n\\setenv BPID :pid\n"
                  "\\! cat /proc/$BPID/schedstat\n" f"{sql};\n" "\\! cat /proc/$BPID/schedstat\n")
        out = run(self.psql_args() + ["-At"], input=script).stdout.split("\n")
        ns = [int(line.split()[0]) for line in out if len(line.split()) == 3]
        return (ns[-1] - ns[0]) / 1e6

    def pgbench(self, script, clients, seconds, options=""):
        path = self.dir / "script.sql"
        path.write_text(script + "\n")
        os.chmod(path, 0o644)
        out = run(["runuser", "-u", "postgres", "--", "env", f"PGOPTIONS={options}", str(BIN / "pgbench"), "-h", str(self.dir), "-p", str(self.port),
                   "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds),
                   "-f", str(path), "postgres"]).stdout
        tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
        lat = float(re.search(r"latency average = ([0-9.]+) ms", out).group(1))
        return tps, lat


def median(xs):
    return statistics.median(xs)


def bulk(server, n=2_000_000):
    """ns per row of SELECT count(x) FROM (SELECT f AS x FROM generate_series(1, n) g) t."""
    samples = {name: [] for name in GENERATORS}
    for _ in range(REPS):
        for name, expr in GENERATORS.items():
            ms = server.timed(f"SELECT count(x) FROM (SELECT {expr} AS x FROM generate_series(1, {n}) g) t")
            samples[name].append(ms * 1e6 / n)
    return {name: median(v) for name, v in samples.items()}


def inserts(server, rows, reps, tables=None):
    tables = tables or TABLES
    result = {}
    samples = {name: [] for name in tables}
    for _ in range(reps):
        for name, (table, _) in tables.items():
            server.sql(f"TRUNCATE {table}")
            server.sql("CHECKPOINT")
            ms = server.timed(f"INSERT INTO {table} (v) SELECT g FROM generate_series(1, {rows}) g")
            samples[name].append(ms)
    for name, (table, _) in tables.items():
        size = int(server.sql(f"SELECT pg_relation_size('{table}_pkey')"))
        result[name] = (median(samples[name]), size)
    return result


def concurrency(server, clients_list, seconds, reps):
    scripts = {
        "SELECT snowflake_nextval()": "SELECT snowflake_nextval();",
        "SELECT nextval('seq')": "SELECT nextval('seq');",
        "SELECT gen_random_uuid()": "SELECT gen_random_uuid();",
        "INSERT snowflake": "INSERT INTO t_snowflake (v) VALUES (1);",
        "INSERT bigserial": "INSERT INTO t_serial (v) VALUES (1);",
        "INSERT uuid v4": "INSERT INTO t_uuid (v) VALUES (1);",
    }
    out = {}
    for clients in clients_list:
        samples = {name: [] for name in scripts}
        for _ in range(reps):
            for name, script in scripts.items():
                # Every INSERT commit waits for the same WAL fsync, whose noise
                # would drown the generators' difference: measure them without it.
                options = "-c synchronous_commit=off" if name.startswith("INSERT") else ""
                samples[name].append(server.pgbench(script, clients, seconds, options))
        for name in scripts:
            tps = median([s[0] for s in samples[name]])
            lat = median([s[1] for s in samples[name]])
            out[(name, clients)] = (tps, lat)
        print(f"  {clients:>2} clients: " + ", ".join(f"{n} {out[(n, clients)][0]:,.0f}" for n in scripts), flush=True)
    return out


def many_sessions(server, sessions, per_session=1_000_000):
    """Total IDs per second of `sessions` sessions drawing at once, and the drift left."""
    def one(expr):
        server.timed(f"SELECT count({expr}) FROM generate_series(1, {per_session})")

    result = {}
    for name, expr in (("snowflake_nextval()", "snowflake_nextval()"), ("nextval('seq')", "nextval('seq')")):
        rates, drifts = [], []
        for _ in range(REPS):
            time.sleep(0.5)  # let the logical clock fall back behind the wall clock
            start = time.monotonic()
            with ThreadPoolExecutor(sessions) as pool:
                list(pool.map(lambda _: one(expr), range(sessions)))
            elapsed = time.monotonic() - start
            rates.append(sessions * per_session / elapsed)
            if name.startswith("snowflake"):
                drifts.append(int(server.sql("SELECT drift_ms FROM snowflake_id_status")))
        result[name] = (median(rates), max(drifts) if drifts else None)
    return result


DECODE_ROWS = 1_000_000
DECODERS = {  # name -> query over the table `ids` of DECODE_ROWS stored IDs
    "scan (floor)": "SELECT count(id) FROM ids",
    "plain SQL expression": "SELECT count(to_timestamp(((id >> 22) + 1735689600000) / 1000.0)) FROM ids",
    "(snowflake_decode(id)).ts": "SELECT count((snowflake_decode(id)).ts) FROM ids",
    "FROM ids, snowflake_decode(ids.id) d": "SELECT count(d.ts) FROM ids, snowflake_decode(ids.id) d",
    "snowflake_timestamp(id)": "SELECT count(snowflake_timestamp(id)) FROM ids",
    "snowflake_worker_id(id)": "SELECT count(snowflake_worker_id(id)) FROM ids",
    "snowflake_sequence(id)": "SELECT count(snowflake_sequence(id)) FROM ids",
    "snowflake_timestamp(id, epoch, 10, 12)":
        "SELECT count(snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12)) FROM ids",
    "all three fields, FROM form":
        "SELECT count(d.ts), count(d.worker_id), count(d.sequence) FROM ids, snowflake_decode(ids.id) d",
    "the whole composite, snowflake_decode(id)": "SELECT count(snowflake_decode(id)) FROM ids",
}


def decoding(server):
    """ns per stored ID of each way to decode, from one scan of DECODE_ROWS IDs."""
    server.sql(f"CREATE TABLE ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, {DECODE_ROWS})")
    server.sql("VACUUM ANALYZE ids")
    samples = {name: [] for name in DECODERS}
    for _ in range(REPS):
        for name, sql in DECODERS.items():
            samples[name].append(server.timed(sql) * 1e6 / DECODE_ROWS)
    return {name: median(v) for name, v in samples.items()}


def machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}"


def chart(conc, clients_list, path):
    data = DOCS / "benchmarks-tps.dat"
    names = sorted({n for (n, _) in conc})
    with open(data, "w") as f:
        f.write("clients " + " ".join(f'"{n}"' for n in names) + "\n")
        for c in clients_list:
            f.write(f"{c} " + " ".join(f"{conc[(n, c)][0]:.0f}" for n in names) + "\n")
    plots = ", ".join(
        f"'{data}' using 1:{i + 2} with linespoints lw 2 title '{n.replace(chr(39), chr(39) * 2)}'"
        for i, n in enumerate(names)
    )
    gp = (
        f"set terminal pngcairo size 1000,600 noenhanced font 'sans,10'\nset output '{path}'\n"
        "set title 'pgbench -M prepared: transactions per second by client count (higher is better)'\n"
        "set xlabel 'clients'\nset ylabel 'TPS'\nset logscale x 2\nset xrange [0.8:20]\nset xtics (1,2,4,8,16)\n"
        "set key outside right\nset grid\nset yrange [0:*]\n"
        f"plot {plots}\n"
    )
    run(["gnuplot"], input=gp)
    data.unlink()


MAJORS_BEGIN = "<!-- majors: begin (benches/majors.sh) -->"
MAJORS_END = "<!-- majors: end -->"


# What section 8 reports per server: the floor, nextval and the generator.
MAJOR_GENERATORS = ("loop (floor)", "nextval('seq')", "snowflake_nextval()")


def bulk_side_by_side(servers, n=2_000_000, cpu=False):
    """bulk() on several servers running at once, `servers` is {label: Server}:
    in each repetition every generator runs on each server in turn before the
    next generator, so that the machine's noise hits both modes alike.
    `cpu`: the backend's CPU time rather than the wall clock's.
    Returns {label: {generator: median ns per row}}."""
    samples = {label: {name: [] for name in MAJOR_GENERATORS} for label in servers}
    for _ in range(REPS):
        for name in MAJOR_GENERATORS:
            expr = GENERATORS[name]
            for label, server in servers.items():
                timed = server.cpu_timed if cpu else server.timed
                ms = timed(f"SELECT count(x) FROM (SELECT {expr} AS x FROM generate_series(1, {n}) g) t")
                samples[label][name].append(ms * 1e6 / n)
    return {label: {name: median(v) for name, v in s.items()} for label, s in samples.items()}


def ready(server):
    """Creates the extension and a sequence, and draws once; a node with a
    registry refuses until its mark keeper has a lease, so it is asked again."""
    server.sql("CREATE EXTENSION snowflake_id; CREATE SEQUENCE seq;")
    for _ in range(100):
        try:
            server.sql("SELECT snowflake_nextval(), nextval('seq')")
            return server.sql("SHOW server_version")
        except subprocess.CalledProcessError:
            time.sleep(0.2)  # the mark keeper is still asking for a worker id
    server.sql("SELECT snowflake_nextval()")  # raises with the reason


def check_library(bin_dir, sha256):
    """Stops the run unless the installed library, which the servers just
    started have loaded, is still the build majors.sh installed (`sha256`):
    on a shared machine another session may have installed its own (a debug
    build costs ten times as much per ID)."""
    if not sha256:
        return
    libdir = run([str(Path(bin_dir) / "pg_config"), "--pkglibdir"]).stdout.strip()
    lib = Path(libdir) / "snowflake_id.so"
    if hashlib.sha256(lib.read_bytes()).hexdigest() != sha256:
        raise SystemExit(f"bench: {lib} is no longer the build benches/majors.sh installed "
                         "(another session installed over it?): its figures would not be this build's")


def major_row(label, b):
    floor = b["loop (floor)"]
    seq, sf = b["nextval('seq')"] - floor, b["snowflake_nextval()"] - floor
    return f"| {label} | {floor:.0f} | {seq:.0f} | {sf:.0f} | {sf / seq:.2f}× |"


def majors_main(majors):
    """Bulk generation per PostgreSQL major, in one run: `majors` is
    [(major, bin_dir, sha256 of the library installed there or "")]. The
    first major is measured in both modes at once: a server with a fixed
    worker id and one whose worker id is leased from a registry (a third
    server) run side by side, repetitions interleaved between them, since on
    a shared machine only ratios measured together compare. Then each other major on its own throwaway server. Writes the
    section between MAJORS_BEGIN and MAJORS_END of docs/benchmarks.md."""
    rows = []
    load_before = os.getloadavg()
    major, bin_dir, sha256 = majors[0]
    print(f"bench: bulk on PostgreSQL {major} ({bin_dir}), fixed worker id and registry side by side", flush=True)
    servers = []
    try:
        fixed = Server(bin_dir, port=PORT)
        servers.append(fixed)
        registry = Server(bin_dir, port=PORT + 1, conf="")
        servers.append(registry)
        registry.sql("CREATE EXTENSION snowflake_id")
        node = Server(bin_dir, port=PORT + 2, conf=(
            "shared_preload_libraries = 'snowflake_id'\n"
            f"snowflake_id.registry = 'host={registry.dir} port={registry.port} dbname=postgres user=postgres'\n"))
        servers.append(node)
        check_library(bin_dir, sha256)
        version = ready(fixed)
        ready(node)
        b = bulk_side_by_side({"fixed": fixed, "registry": node})
        cpu = bulk_side_by_side({"fixed": fixed, "registry": node}, cpu=True)
    finally:
        for server in reversed(servers):
            server.stop()
    rows.append(major_row(f"{version}, worker id set", b["fixed"]))
    rows.append(major_row(f"{version}, worker id from a registry", b["registry"]))
    rows.append(major_row(f"{version}, worker id set, backend CPU time", cpu["fixed"]))
    rows.append(major_row(f"{version}, worker id from a registry, backend CPU time", cpu["registry"]))
    leased = {"wall": (b["registry"]["snowflake_nextval()"] - b["registry"]["loop (floor)"])
              / (b["fixed"]["snowflake_nextval()"] - b["fixed"]["loop (floor)"]),
              "cpu": (cpu["registry"]["snowflake_nextval()"] - cpu["registry"]["loop (floor)"])
              / (cpu["fixed"]["snowflake_nextval()"] - cpu["fixed"]["loop (floor)"])}
    cpu_ratio = {label: (c["snowflake_nextval()"] - c["loop (floor)"]) / (c["nextval('seq')"] - c["loop (floor)"])
                 for label, c in cpu.items()}
    for major, bin_dir, sha256 in majors[1:]:
        print(f"bench: bulk on PostgreSQL {major} ({bin_dir})", flush=True)
        server = Server(bin_dir)
        try:
            check_library(bin_dir, sha256)
            version = ready(server)
            b = bulk_side_by_side({major: server})[major]
        finally:
            server.stop()
        rows.append(major_row(f"{version}, worker id set", b))
    load_after = os.getloadavg()
    load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    section = "\n".join([
        MAJORS_BEGIN,
        "## 8. Bulk generation on each PostgreSQL major",
        "",
        f"Run on {datetime.date.today().isoformat()} by `bash benches/majors.sh`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + f" ({machine()}): the bulk statement of section 1,",
        f"release build, median of {REPS} repetitions, generators interleaved. The first two rows ran at the same time,",
        "each repetition alternating between them: one server with `snowflake_id.worker_id` set, one with",
        "`snowflake_id.registry` set (its worker id leased from a registry on a third server). Each other major ran",
        "after them on a throwaway server of its own. Compare the ratios, each measured on one server against its",
        f"own `nextval`: the machine is shared (load average {load(load_before)} before the run, {load(load_after)} after).",
        "The two rows marked *backend CPU time* ran the same statements again, side by side, but count the CPU time",
        "the backend spent (`/proc/PID/schedstat`, read by psql right before and after the statement) instead of",
        "the wall clock, which on a busy 2-core machine also counts the time the backend waited for a CPU.",
        f"A leased worker id costs {leased['wall']:.2f}× a fixed one per ID by the wall clock, {leased['cpu']:.2f}× by CPU time.",
        f"Target (set for 0.6.0), by CPU time: a leased worker id within 10% of a fixed one, both at most 0.25× `nextval`"
        f" per ID: {leased['cpu']:.2f}×, {cpu_ratio['fixed']:.2f}× and {cpu_ratio['registry']:.2f}× → "
        + ("met." if leased["cpu"] <= 1.10 and max(cpu_ratio.values()) <= 0.25 else "MISSED."),
        "",
        "Why this section and section 1 disagreed (43 ns per ID there, 96 fixed and 113 leased here on 2026-11-23,",
        "50 and 66 in the run that set the target): each was one run of wall-clock medians on a machine shared by several",
        "sessions, section 1's at a quiet hour (a floor of 89 ns a row), this one's at a busy one (249 ns); the",
        "wall clock counts the time a backend waits for a CPU, which differs from statement to statement by more",
        "than the generator costs. What the backend executes does not differ: counted by valgrind",
        "(`benches/nextval_instructions.sh`: callgrind, a postmaster run under it, 200,000 calls in one statement,",
        "only the library's instructions counted), a call cost 433 instructions with a fixed worker id and 437 with",
        "a lease before 0.6.0's rework, 231 and 233 after it: the common case is now one step of the generator",
        "(core `try_issue`, inlined) with the settings checked once per backend (only a `max_drift` a reload",
        "refused is looked at per call, and `max_drift` itself is read per call, so a reload still takes effect).",
        "A lease adds the `registry` test and the lease's two words read in the spinlock hold that issues the ID;",
        "the ceiling is one comparison in the generator's step, for both. The lease's registry calls stay on the",
        "mark keeper. About 23 ns of each call is reading the wall clock (`clock_gettime`, timed alone on this",
        "machine, clocksource tsc), which every ID needs.",
        "",
        "| server | loop (floor), ns per row | `nextval('seq')`, ns per ID above the floor "
        "| `snowflake_nextval()`, ns per ID above the floor | cost vs nextval |",
        "|---|---:|---:|---:|---:|",
        *rows,
        MAJORS_END,
    ])
    write_section(MAJORS_BEGIN, MAJORS_END, section)
    print("\n".join(rows))
    print(f"load average before: {load(load_before)}, after: {load(load_after)}")


PAST_BEGIN = "<!-- past instants: begin (benches/past_instants.sh) -->"
PAST_END = "<!-- past instants: end -->"
PAST_ROWS = 1_000_000
# The staging tables an import reads, one per kind and repetition: `{r}` is
# the repetition (each repetition is a new session, and a session's claims
# raise the levels of the spans it touches: the kinds that use many slots of
# a millisecond get a day of their own), `g` the row number. The long and
# the random kinds spread their rows over 600 days after the default epoch,
# as an import of two years of history would.
PAST_KINDS = {  # kind -> (label, created_at as an SQL expression of g and {r})
    "ordered": ("one row per ms, in time order",
                "timestamptz '2025-03-01 00:00+00' + {r} * interval '1 day' + g * interval '1 ms'"),
    "dense": ("100 rows per ms, in time order",
              "timestamptz '2025-04-01 00:00+00' + {r} * interval '1 day' + (g / 100) * interval '1 ms'"),
    "long": ("one row per 51.84 s over 600 days, in time order",
             "timestamptz '2025-01-01 00:00+00' + g * interval '51.84 s'"),
    "random": ("random order over 600 days",
               "timestamptz '2025-01-01 00:00+00' + ((g * 2654435761) % 51840000000) * interval '1 ms'"),
}


SEQ = "nextval('seq')"


def invocation(script):
    """The command that ran this: `script` when it did (it sets BENCH_SCRIPT),
    else bench.py's own command line, the library installed beforehand."""
    if os.environ.get("BENCH_SCRIPT") == script:
        return script + "".join(f" {a}" for a in sys.argv[3:])
    return "python3 benches/bench.py " + " ".join(sys.argv[1:])


def code(name):
    """A generator's name with its call as code: `f()`, and what follows."""
    call, _, rest = name.partition(", ")
    return f"`{call}`" + (f", {rest}" if rest else "")


def wal_counts(server):
    """(WAL flushes, WAL records) so far, once the last session's statistics
    are in (a backend reports its own when it exits)."""
    time.sleep(0.3)
    syncs, records = server.sql("SELECT wal_sync, wal_records FROM pg_stat_wal").split("|")
    return int(syncs), int(records)


def past_instants_main(bin_dir, n=PAST_ROWS):
    """Past-instant IDs in bulk from a staging table, one session per
    statement, against nextval() and the live generator on the same server,
    repetitions interleaved. Writes the section between PAST_BEGIN and
    PAST_END of docs/benchmarks.md."""
    load_before = os.getloadavg()
    server = Server(bin_dir)
    select = "SELECT count(x) FROM (SELECT {expr} AS x FROM {src}) t"
    insert = "INSERT INTO imported (id, created_at) SELECT {expr}, created_at FROM {src}"
    # name -> (expression, source, floor name); `{r}` in the source is the
    # repetition.
    selects = {
        "loop (floor)": ("g", f"generate_series(1, {n}) g", None),
        "nextval('seq')": ("nextval('seq')", f"generate_series(1, {n}) g", "loop (floor)"),
        "snowflake_nextval()": ("snowflake_nextval()", f"generate_series(1, {n}) g", "loop (floor)"),
        "staging scan (floor)": ("created_at", "stage_ordered_{r}", None),
        "nextval('seq'), staging": ("nextval('seq')", "stage_ordered_{r}", "staging scan (floor)"),
        "snowflake_nextval(), staging": ("snowflake_nextval()", "stage_ordered_{r}", "staging scan (floor)"),
    }
    for kind, (label, _) in PAST_KINDS.items():
        selects[f"snowflake_nextval_at(created_at), {label}"] = (
            "snowflake_nextval_at(created_at)", f"stage_{kind}_{{r}}", "staging scan (floor)")
    inserts = {
        "nextval('seq')": ("nextval('seq')", "stage_ordered_{r}"),
        "snowflake_nextval()": ("snowflake_nextval()", "stage_ordered_{r}"),
    }
    for kind, (label, _) in PAST_KINDS.items():
        # The dense kind's inserts take a day of their own too: 100 rows a
        # millisecond twice over would fill its 256 slots.
        src = f"stage_{kind}_{{r}}" if kind != "dense" else f"stage_{kind}_{{r}}_insert"
        inserts[f"snowflake_nextval_at(created_at), {label}"] = ("snowflake_nextval_at(created_at)", src)
    samples = {name: [] for name in selects}
    insert_samples = {name: [] for name in inserts}
    # Durable writes of claims per statement: WAL flushes (each write of
    # claims flushes once, and nothing else in these statements writes WAL)
    # and WAL records (one per span claimed), from pg_stat_wal around it.
    writes = {name: [] for name in selects if name.startswith("snowflake_nextval_at")}
    try:
        version = ready(server)
        for r in range(REPS):
            for kind, (_, at) in PAST_KINDS.items():
                server.sql(f"CREATE TABLE stage_{kind}_{r} AS SELECT g, {at.format(r=r)} AS created_at "
                           f"FROM generate_series(1, {n}) g")
            server.sql(f"CREATE TABLE stage_dense_{r}_insert AS SELECT g, "
                       f"{PAST_KINDS['dense'][1].format(r=r + REPS)} AS created_at FROM generate_series(1, {n}) g")
        server.sql("CREATE TABLE imported (id bigint PRIMARY KEY, created_at timestamptz NOT NULL)")
        server.sql("VACUUM ANALYZE")
        for r in range(REPS):
            for name, (expr, src, _) in selects.items():
                before = wal_counts(server) if name in writes else None
                ms = server.timed(select.format(expr=expr, src=src.format(r=r)))
                samples[name].append(ms * 1e6 / n)
                if before is not None:
                    after = wal_counts(server)
                    writes[name].append((after[0] - before[0], after[1] - before[1]))
            for name, (expr, src) in inserts.items():
                server.sql("TRUNCATE imported")
                server.sql("CHECKPOINT")
                insert_samples[name].append(server.timed(insert.format(expr=expr, src=src.format(r=r))))
        claims = server.sql("SELECT count(*) FROM regexp_split_to_table(pg_read_file('snowflake_id.history'), '\n') l"
                            " WHERE l LIKE 'interval=%'")
    finally:
        server.stop()
    b = {name: median(v) for name, v in samples.items()}
    ins = {name: median(v) for name, v in insert_samples.items()}
    seq_above = b["nextval('seq'), staging"] - b["staging scan (floor)"]
    rows = []
    for name, (_, _, floor) in selects.items():
        v = b[name]
        if floor is None:
            rows.append(f"| {name} | {v:.0f} | – | {1e9 / v:,.0f} rows | – |")
        else:
            above = v - b[floor]
            seq = b[SEQ] - b[floor] if floor == "loop (floor)" else seq_above
            rows.append(f"| {code(name)} | {v:.0f} | {above:.0f} | {1e9 / v:,.0f} | {above / seq:.2f}× |")
    write_rows = []
    for name, counts in writes.items():
        syncs, records = median([c[0] for c in counts]), median([c[1] for c in counts])
        write_rows.append(f"| {code(name)} | {syncs:,.0f} | {records:,.0f} |")
    insert_rows = []
    for name, ms in ins.items():
        insert_rows.append(f"| {code(name)} | {ms:,.0f} | {n / ms * 1000:,.0f} | {ms / ins[SEQ]:.2f}× |")
    past = [name for name in selects if name.startswith("snowflake_nextval_at")]
    live_above = b["snowflake_nextval(), staging"] - b["staging scan (floor)"]
    verdicts = "; ".join(f"{name.split(', ', 1)[1]}: {1e9 / b[name]:,.0f} "
                         f"({'met' if 1e9 / b[name] >= 1_000_000 else 'MISSED'})" for name in past)
    load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    section = "\n".join([
        PAST_BEGIN,
        "## 9. Past-instant IDs in bulk",
        "",
        f"Run on {datetime.date.today().isoformat()} by `{invocation('bash benches/past_instants.sh')}`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + f" ({machine()}), {version}, release build,",
        f"median of {REPS} repetitions, generators interleaved, each statement a new session (a new round of claims).",
        f"An import reads its rows from a staging table: `SELECT count(x) FROM (SELECT f AS x FROM stage) t` over",
        f"{n:,} staged rows `(g, created_at)`, and the same generators over section 1's `generate_series` loop. The",
        "floors read the rows alone; `IDs per second` counts the whole statement, scan included, as an import would",
        "see it. Each repetition reads staging tables of its own (the in-order ones a day of their own: a session's",
        "claims raise the level of what they span by one); the last two kinds spread rows over 600 days. The",
        f"level map held {claims} intervals at the end. Load average {load(load_before)} before, "
        f"{load(os.getloadavg())} after.",
        "",
        "| generator | ns per row | ns per ID above the floor | IDs per second | cost vs nextval |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        "Durable writes of past-instant claims per statement (median): WAL flushes during it (`pg_stat_wal.wal_sync`;",
        "each write of claims is the history file, fsynced, its directory fsynced, and one flush of its WAL records)",
        "and WAL records (one per piece of a span claimed; a write carries several when a statement scatters its rows).",
        "",
        "| generator | durable writes | WAL records |",
        "|---|---:|---:|",
        *write_rows,
        "",
        f"The import itself, `INSERT INTO imported (id, created_at) SELECT f, created_at FROM stage` ({n:,} rows,",
        "`id bigint PRIMARY KEY`, emptied and checkpointed before each): the table and its index cost more than",
        "the generator, and random order scatters the index inserts as UUIDv4 keys do.",
        "",
        "| generator | ms | rows per second | vs nextval |",
        "|---|---:|---:|---:|",
        *insert_rows,
        "",
        f"Target: at least 1,000,000 past-instant IDs a second in one session, whole statement: {verdicts}.",
        f"Above the scan, `snowflake_nextval()` costs {live_above:.0f} ns per ID and `nextval` {seq_above:.0f}.",
        PAST_END,
    ])
    write_section(PAST_BEGIN, PAST_END, section)
    print("\n".join(rows + [""] + write_rows + [""] + insert_rows))
    print("\n".join(section.splitlines()[-3:-1]))

TEXT_BEGIN = "<!-- text forms: begin (benches/text_forms.sh) -->"
TEXT_END = "<!-- text forms: end -->"
TEXT_ROWS = 2_000_000
# name -> (SQL, floor name or None). Each reads one column of `texts` per
# row, so each conversion is measured above the scan of the column it reads;
# the built-in decimal text of a bigint is the baseline.
TEXT_CASES = {
    "scan of id (floor)": ("SELECT count(id) FROM texts", None),
    "id::text (built-in)": ("SELECT count(id::text) FROM texts", "scan of id (floor)"),
    "snowflake_to_base62(id)": ("SELECT count(snowflake_to_base62(id)) FROM texts", "scan of id (floor)"),
    "snowflake_to_base32(id)": ("SELECT count(snowflake_to_base32(id)) FROM texts", "scan of id (floor)"),
    "scan of decimal text (floor)": ("SELECT count(b10) FROM texts", None),
    "b10::bigint (built-in)": ("SELECT count(b10::bigint) FROM texts", "scan of decimal text (floor)"),
    "scan of base62 text (floor)": ("SELECT count(b62) FROM texts", None),
    "snowflake_from_base62(b62)": ("SELECT count(snowflake_from_base62(b62)) FROM texts", "scan of base62 text (floor)"),
    "scan of base32 text (floor)": ("SELECT count(b32) FROM texts", None),
    "snowflake_from_base32(b32)": ("SELECT count(snowflake_from_base32(b32)) FROM texts", "scan of base32 text (floor)"),
}


def text_forms_main(bin_dir, n=TEXT_ROWS):
    """The short text forms against the built-in decimal text,
    each above a scan of the column it reads; writes the section between
    TEXT_BEGIN and TEXT_END of docs/benchmarks.md."""
    server = Server(bin_dir)
    samples = {name: [] for name in TEXT_CASES}
    try:
        version = ready(server)
        server.sql(f"CREATE TABLE texts AS SELECT id, id::text AS b10, snowflake_to_base62(id) AS b62, "
                   f"snowflake_to_base32(id) AS b32 FROM (SELECT snowflake_nextval() AS id "
                   f"FROM generate_series(1, {n})) g")
        server.sql("VACUUM ANALYZE texts")
        for name, (sql, _) in TEXT_CASES.items():  # warm the cache
            server.sql(sql)
        for _ in range(REPS):
            for name, (sql, _) in TEXT_CASES.items():
                samples[name].append(server.timed(sql) * 1e6 / n)
    finally:
        server.stop()
    b = {name: median(v) for name, v in samples.items()}
    rows = []
    for name, (_, floor) in TEXT_CASES.items():
        if floor is None:
            rows.append(f"| {name} | {b[name]:.0f} | – |")
        else:
            rows.append(f"| {code(name)} | {b[name]:.0f} | {b[name] - b[floor]:.0f} |")
    ours = [name for name in TEXT_CASES if name.startswith("snowflake_")]
    worst = max(b[name] - b[TEXT_CASES[name][1]] for name in ours)
    section = "\n".join([
        TEXT_BEGIN,
        "## 11. Short text forms",
        "",
        f"Run on {datetime.date.today().isoformat()} by `{invocation('bash benches/text_forms.sh')}`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + f" ({machine()}), {version}, release build,",
        f"median of {REPS} repetitions, interleaved. `SELECT count(f(col)) FROM texts` over {n:,} live IDs and their",
        "texts (decimal, base62, base32), each above a scan of the column it reads; the built-in decimal",
        "conversions are the baseline.",
        "",
        "| conversion | ns per row | ns per ID above the scan |",
        "|---|---:|---:|",
        *rows,
        "",
        f"Target: a few tens of ns per ID above the scan: the slowest form costs {worst:.0f} ns → "
        f"{'met' if worst <= 50 else 'MISSED'}.",
        TEXT_END,
    ])
    write_section(TEXT_BEGIN, TEXT_END, section)
    print("\n".join(rows))
    print(section.splitlines()[-2])


REKEY_BEGIN = "<!-- rekey: begin (benches/rekey.sh) -->"
REKEY_END = "<!-- rekey: end -->"
REKEY_SETUP = """
DROP TABLE IF EXISTS lines, orders CASCADE;
CREATE TABLE orders (id serial PRIMARY KEY, created_at timestamptz NOT NULL, total numeric(10, 2) NOT NULL);
-- One order every 51.84 s from the epoch on: {rows} over 600 days, keys in time order as a serial gives them.
INSERT INTO orders (created_at, total)
SELECT timestamptz '2025-01-01 00:00+00' + g * interval '51.84 s', (g % 10000) / 100.0
  FROM generate_series(1, {rows}) g;
CREATE TABLE lines (id serial PRIMARY KEY, order_id int NOT NULL REFERENCES orders, item text NOT NULL);
-- One line per order, not in the orders' order.
INSERT INTO lines (order_id, item) SELECT 1 + (g::bigint * 7919) % {rows}, 'item ' || g % 100 FROM generate_series(1, {rows}) g;
CREATE INDEX lines_order_id ON lines (order_id);
"""
# The map and its statements: what the plain run leaves out.
REKEY_MAP = re.compile(r"pg_temp\.snowflake_rekey_\d+")
REKEY_UPDATE = re.compile(r"^UPDATE (\S+) AS t SET (\S+) = m\.new FROM (\S+) AS m WHERE t\.\S+ = m\.old$")


def rekey_setup(server, rows):
    server.sql(REKEY_SETUP.format(rows=rows))
    server.sql("VACUUM ANALYZE orders, lines")
    server.sql("CHECKPOINT")


def plain_statements(planned):
    """The dry run's statements with plain arithmetic keys, each paired with
    its plain counterpart: None for the map's four statements, an UPDATE
    adding 10^9 for each UPDATE through the map, the statement itself for
    the rest."""
    out = []
    for stmt in planned:
        m = REKEY_UPDATE.match(stmt)
        if m:
            out.append((stmt, f"UPDATE {m.group(1)} SET {m.group(2)} = {m.group(2)} + 1000000000"))
        elif REKEY_MAP.search(stmt):
            out.append((stmt, None))
        else:
            out.append((stmt, stmt))
    return out


def timed_each(server, statements):
    """Milliseconds of each statement, run one after another in one
    transaction by psql (the breakdown of a conversion)."""
    script = "\\timing on\nBEGIN;\n" + "".join(f"{s};\n" for s in statements) + "COMMIT;\n"
    out = run(server.psql_args(), input=script).stdout
    times = [float(t) for t in re.findall(r"Time: ([0-9.]+) ms", out)]
    return times[1:1 + len(statements)]  # BEGIN and COMMIT left out


def rekey_main(bin_dir, rows=1_000_000):
    """snowflake_convert(orders, id, rekey_by => created_at) on `rows` orders
    and as many lines referencing them, against the same statements with
    plain arithmetic keys (the dry run's list, the map left out, `+ 10^9`),
    fresh tables for every run, runs interleaved. Prints both times and the
    ratio and writes the section between REKEY_BEGIN and REKEY_END of
    docs/benchmarks.md."""
    load_before = os.getloadavg()
    reps = REPS if not QUICK else 2
    server = Server(bin_dir)
    convert_ms, plain_ms, convert_each, plain_each = [], [], [], []
    try:
        version = ready(server)
        rekey_setup(server, rows)
        sizes = server.sql("SELECT pg_size_pretty(pg_total_relation_size('orders')), "
                           "pg_size_pretty(pg_total_relation_size('lines'))").split("|")
        planned = server.sql("SELECT snowflake_convert('orders', 'id', dry_run => true, rekey_by => 'created_at')")
        planned = planned.splitlines()
        pairs = plain_statements(planned)
        plain = [p for _, p in pairs if p is not None]
        do_plain = "DO $plain$ BEGIN " + " ".join(f"EXECUTE {quote(s)};" for s in plain) + " END $plain$"
        for rep in range(reps):
            print(f"rekey: repetition {rep + 1} of {reps}", flush=True)
            rekey_setup(server, rows)
            convert_ms.append(server.timed("SELECT snowflake_convert('orders', 'id', rekey_by => 'created_at')"))
            rekey_setup(server, rows)
            plain_ms.append(server.timed(do_plain))
            rekey_setup(server, rows)
            plain_each.append(timed_each(server, plain))
            rekey_setup(server, rows)
            convert_each.append(timed_each(server, planned))
        # The last run was the re-key's statements: check its outcome.
        bad = server.sql("SELECT count(*) FROM orders WHERE snowflake_timestamp(id) <> date_trunc('ms', created_at)")
    finally:
        server.stop()
    if bad != "0":
        raise SystemExit(f"rekey: {bad} orders do not tell their own time after the conversion's statements")
    c, p = median(convert_ms), median(plain_ms)
    ratio = c / p
    ce = [median(v) for v in zip(*convert_each)]
    pe = dict(zip(plain, [median(v) for v in zip(*plain_each)]))
    short = lambda s: REKEY_MAP.sub("map", s).replace("public.", "")
    breakdown = []
    for (stmt, twin), ms in zip(pairs, ce):
        if twin is None:
            breakdown.append(f"| `{short(stmt)}` | {ms:,.0f} | – |")
        elif twin != stmt:
            breakdown.append(f"| `{short(stmt)}`; plain: `{short(twin)}` | {ms:,.0f} | {pe[twin]:,.0f} |")
        else:
            breakdown.append(f"| `{short(stmt)}` | {ms:,.0f} | {pe[twin]:,.0f} |")
    breakdown.append(f"| sum | {sum(ce):,.0f} | {sum(pe.values()):,.0f} |")
    load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    section = "\n".join([
        REKEY_BEGIN,
        "## 10. Re-keying a table to past-instant IDs",
        "",
        f"Run on {datetime.date.today().isoformat()} by `{invocation('bash benches/rekey.sh')}`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + f" ({machine()}), {version}, release build,",
        f"median of {reps} repetitions, fresh tables for each run, runs interleaved. `orders (id serial PRIMARY KEY,",
        f"created_at timestamptz, total numeric)`: {rows:,} rows, one every 51.84 s over 600 days ({sizes[0]} with",
        f"its index); `lines (id serial PRIMARY KEY, order_id int REFERENCES orders, item text)` with an index on",
        f"`order_id`: {rows:,} rows ({sizes[1]}). Re-key: `SELECT snowflake_convert('orders', 'id', rekey_by =>",
        "'created_at')`. Plain: the statements its dry run lists, in one `DO` block, without the map (its four",
        "statements) and with `SET id = id + 1000000000` for each `UPDATE` through it: the same widening, locks,",
        f"foreign key dropped and added back. Load average {load(load_before)} before, {load(os.getloadavg())} after.",
        "",
        "| run | seconds |",
        "|---|---:|",
        f"| re-key, `snowflake_convert(..., rekey_by => 'created_at')` | {c / 1000:.1f} |",
        f"| plain arithmetic keys, the same statements | {p / 1000:.1f} |",
        f"| ratio | {ratio:.2f}× |",
        "",
        f"Target: the re-key at most 2× the plain statements: {ratio:.2f}× → {'met' if ratio <= 2 else 'MISSED'}.",
        "",
        "Where the time goes: each statement run by psql in one transaction (ms, median), the re-key's",
        "list and the plain one's.",
        "",
        "| statement | re-key | plain |",
        "|---|---:|---:|",
        *breakdown,
        REKEY_END,
    ])
    write_section(REKEY_BEGIN, REKEY_END, section)
    print(f"re-key: {c / 1000:.2f} s, plain: {p / 1000:.2f} s, ratio {ratio:.2f}")
    print("\n".join(breakdown))


BLOCKS_BEGIN = "<!-- blocks: begin (benches/blocks.sh) -->"
BLOCKS_END = "<!-- blocks: end -->"


def blocks_main(bin_dir, n=1_000_000):
    """A block of IDs in one call against the same number of
    snowflake_nextval() calls in one statement, on one server, repetitions
    interleaved. Writes the section between BLOCKS_BEGIN and BLOCKS_END of
    docs/benchmarks.md."""
    load_before = os.getloadavg()
    port = int(os.environ.get("BENCH_PORT", PORT))
    server = Server(bin_dir, port=port)
    kinds = {  # name -> statement drawing n IDs
        "loop (floor)": f"SELECT count(x) FROM (SELECT g AS x FROM generate_series(1, {n}) g) t",
        f"snowflake_nextval(), {n:,} calls": (
            f"SELECT count(x) FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, {n}) g) t"),
        f"snowflake_nextval_block({n})": f"SELECT count(x) FROM (SELECT snowflake_nextval_block({n}) AS x) t",
        f"snowflake_nextval_block({n}), in FROM": f"SELECT count(x) FROM snowflake_nextval_block({n}) x",
        f"snowflake_nextval_array({n})": f"SELECT cardinality(snowflake_nextval_array({n}))",
        f"unnest(snowflake_nextval_array({n}))": f"SELECT count(x) FROM unnest(snowflake_nextval_array({n})) x",
        f"snowflake_nextval_block(1000), {n // 1000:,} calls": (
            f"SELECT count(x) FROM generate_series(1, {n // 1000}) g, snowflake_nextval_block(1000) x"),
        f"snowflake_nextval_array(100), {n // 100:,} calls": (
            f"SELECT sum(cardinality(snowflake_nextval_array(100))) FROM generate_series(1, {n // 100}) g"),
    }
    try:
        ready(server)
        server.sql("SELECT snowflake_nextval_array(10)")
        samples = {name: [] for name in kinds}
        for _ in range(REPS):
            for name, sql in kinds.items():
                samples[name].append(server.timed(sql) * 1e6 / n)
                # Let the wall clock catch up with the logical one between
                # runs (a million IDs are 260 ms of ticks): no run waits
                # out another's drift.
                time.sleep(0.4)
        per_id = {name: median(v) for name, v in samples.items()}
        version = server.sql("SHOW server_version")
    finally:
        server.stop()
    load_after = os.getloadavg()
    single = per_id[f"snowflake_nextval(), {n:,} calls"]
    floor = per_id["loop (floor)"]
    rows = [
        "| how | ns per ID, whole statement | vs the single calls | IDs per second |",
        "|---|---:|---:|---:|",
    ]
    for name, ns in per_id.items():
        ratio = "–" if name == "loop (floor)" else f"{ns / single:.2f}×"
        rows.append(f"| {code(name)} | {ns:.0f} | {ratio} | {1e9 / ns:,.0f} |")
    block = per_id[f"snowflake_nextval_block({n})"]
    array = per_id[f"snowflake_nextval_array({n})"]
    verdict = "met" if max(block, array) <= single / 2 else "MISSED"
    section = "\n".join([
        BLOCKS_BEGIN,
        "## 12. Blocks of IDs in one call",
        "",
        f"Run on {datetime.date.today()} by `{invocation('bash benches/blocks.sh')}` ({machine()}), {version},",
        f"release build, median of {REPS} repetitions, kinds interleaved. {n:,} IDs per statement each way; the",
        "floor is the bare `generate_series` loop of the single calls. Load average "
        + ", ".join(f"{x:.2f}" for x in load_before) + " before, " + ", ".join(f"{x:.2f}" for x in load_after) + " after.",
        "",
        *rows,
        "",
        "In FROM, PostgreSQL stores a set-returning function's rows in a tuplestore before the query reads",
        "them, which spills to disk past `work_mem` (4 MB by default); the floor's own `generate_series` too.",
        "In the select list, or as an array, the IDs go straight to the query.",
        "",
        f"Target: a block's cost per ID at most half of `snowflake_nextval()` called {n:,} times in one statement",
        f"(whole statements, floor included, as an application pays it): {block / single:.2f}× as a set,",
        f"{array / single:.2f}× as an array → {verdict}. The single calls cost {single - floor:.0f} ns per ID above their loop.",
        BLOCKS_END,
    ])
    write_section(BLOCKS_BEGIN, BLOCKS_END, section)
    print(section)


UUIDV7_BEGIN = "<!-- uuidv7: begin (benches/uuidv7.sh) -->"
UUIDV7_END = "<!-- uuidv7: end -->"
UUIDV7_GENERATORS = {  # name -> SQL expression, on PostgreSQL 18
    "loop (floor)": "g",
    "nextval('seq')": "nextval('seq')",
    "snowflake_nextval()": "snowflake_nextval()",
    "uuidv7()": "uuidv7()",
    "gen_random_uuid()": "gen_random_uuid()",
}
UUIDV7_TABLES = {  # generator -> (table, column type and default)
    "bigserial": ("t_serial", "bigserial"),
    "snowflake_nextval()": ("t_snowflake", "bigint DEFAULT snowflake_nextval()"),
    "uuidv7()": ("t_uuidv7", "uuid DEFAULT uuidv7()"),
}


def uuidv7_main(bin_dir, n=2_000_000, rows=1_000_000):
    """PostgreSQL 18's own uuidv7() beside the generator on one 18 server:
    section 1's bulk statement and section 3's inserts, generators
    interleaved. Writes the section between UUIDV7_BEGIN and UUIDV7_END of
    docs/benchmarks.md."""
    load_before = os.getloadavg()
    server = Server(bin_dir)
    samples = {name: [] for name in UUIDV7_GENERATORS}
    try:
        version = ready(server)
        for _, (table, coltype) in UUIDV7_TABLES.items():
            server.sql(f"CREATE TABLE {table} (id {coltype} PRIMARY KEY, v int)")
        for _ in range(REPS):
            for name, expr in UUIDV7_GENERATORS.items():
                ms = server.timed(f"SELECT count(x) FROM (SELECT {expr} AS x FROM generate_series(1, {n}) g) t")
                samples[name].append(ms * 1e6 / n)
        ins = inserts(server, rows, REPS, UUIDV7_TABLES)
    finally:
        server.stop()
    b = {name: median(v) for name, v in samples.items()}
    floor = b["loop (floor)"]
    seq = b["nextval('seq')"] - floor
    bulk_rows = []
    for name, v in b.items():
        if name == "loop (floor)":
            bulk_rows.append(f"| {name} | {v:.0f} | – | {1e9 / v:,.0f} rows | – |")
        else:
            bulk_rows.append(f"| `{name}` | {v:.0f} | {v - floor:.0f} | {1e9 / v:,.0f} | {(v - floor) / seq:.2f}× |")
    base = ins["bigserial"][0]
    insert_rows = [f"| {'`' + name + '`' if '(' in name else name} | {ms:,.0f} | {rows / ms * 1000:,.0f} | "
                   f"{base / ms:.2f}× speed | {size / 2**20:.1f} MiB |" for name, (ms, size) in ins.items()]
    sf, u7 = b["snowflake_nextval()"] - floor, b["uuidv7()"] - floor
    load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    section = "\n".join([
        UUIDV7_BEGIN,
        "## 14. PostgreSQL 18's `uuidv7()` beside the generator",
        "",
        f"Run on {datetime.date.today().isoformat()} by `{invocation('bash benches/uuidv7.sh')}`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + f" ({machine()}), {version}, release build,",
        f"one throwaway server, median of {REPS} repetitions, generators interleaved. `uuidv7()` is what users",
        "of PostgreSQL 18 pick instead: built in, time-ordered, 16 bytes. Section 1's bulk statement",
        f"({n:,} calls):",
        "",
        "| generator | ns per row | ns per ID above the floor | IDs per second | cost vs nextval |",
        "|---|---:|---:|---:|---:|",
        *bulk_rows,
        "",
        f"Section 3's insert, `INSERT ... SELECT` of {rows:,} rows into an emptied, checkpointed table whose",
        "primary key defaults to the generator, and the size of its primary key index after it:",
        "",
        "| generator | ms | rows/s | vs bigserial | pkey index |",
        "|---|---:|---:|---:|---:|",
        *insert_rows,
        "",
        f"Per ID above the floor `uuidv7()` costs {u7 / sf:.1f}× what `snowflake_nextval()` does ({u7:.0f} against",
        f"{sf:.0f} ns); its index is {ins['uuidv7()'][1] / ins['snowflake_nextval()'][1]:.2f}× as large "
        "(16-byte keys against 8). Both append to the index in time order. Both UUID functions read random",
        "bytes from the kernel at every call (`pg_strong_random`), whose cost moves with the machine's load far",
        "more than the others' do (an earlier run measured `uuidv7()` at 1,157 ns per ID here at a quieter hour). Load average "
        f"{load(load_before)} before, {load(os.getloadavg())} after.",
        UUIDV7_END,
    ])
    write_section(UUIDV7_BEGIN, UUIDV7_END, section)
    print(section)


MANAGED_BEGIN = "<!-- managed: begin (benches/managed.sh) -->"
MANAGED_END = "<!-- managed: end -->"
MANAGED_DECODE_ROWS = 1_000_000


def psql_in(server, db):
    """psql for database `db` of `server` (Server's own helpers use postgres)."""
    args = server.psql_args()
    args[args.index("-d") + 1] = db
    return args


def sql_in(server, db, sql):
    return run(psql_in(server, db) + ["-At", "-c", sql]).stdout.strip()


def timed_in(server, db, sql):
    """Server-side milliseconds of one statement in `db`, via psql's \\timing."""
    out = run(psql_in(server, db), input=f"\\timing on\n{sql};\n").stdout
    return float(re.findall(r"Time: ([0-9.]+) ms", out)[-1])


def pgbench_in(server, db, script, clients, seconds):
    """Transactions per second of `script` in `db`."""
    path = server.dir / f"script_{db}.sql"
    path.write_text(script + "\n")
    os.chmod(path, 0o644)
    out = run(["runuser", "-u", "postgres", "--", str(BIN / "pgbench"), "-h", str(server.dir), "-p", str(server.port),
               "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds),
               "-f", str(path), db]).stdout
    return float(re.search(r"tps = ([0-9.]+)", out).group(1))


def managed_main(bin_dir, plain_script, n=2_000_000, clients=4, seconds=10):
    """The managed edition (SQL and PL/pgSQL only, dist/snowflake_id_plain.sql)
    beside the native one on one server: the native extension preloaded in
    database postgres, the managed edition's plain script in database
    managed with a worker id set. Per ID (section 1's bulk statement,
    generators interleaved); single-row INSERTs per second by pgbench into
    keyed tables, against bigserial; decoders per row, managed against native.
    Writes the section between MANAGED_BEGIN and MANAGED_END."""
    load_before = os.getloadavg()
    server = Server(bin_dir)
    try:
        version = ready(server)
        major = int(server.sql("SHOW server_version_num")) // 10000
        server.sql("CREATE DATABASE managed")
        script = server.dir / "snowflake_id_plain.sql"
        shutil.copy(plain_script, script)
        os.chmod(script, 0o644)
        run(psql_in(server, "managed") + ["-f", str(script)])
        sql_in(server, "managed", "SELECT snowflake_set_worker_id(2); CREATE SEQUENCE seq;")
        sql_in(server, "managed", "SELECT snowflake_nextval(), nextval('seq')")
        # (database, name, expression): the floor and nextval() in each
        # database, so that each edition's ratio is against its neighbours.
        gens = [("postgres", "loop (floor)", "g"),
                ("postgres", "nextval('seq')", "nextval('seq')"),
                ("postgres", "snowflake_nextval(), native", "snowflake_nextval()"),
                ("postgres", "gen_random_uuid()", "gen_random_uuid()")]
        if major >= 18:
            gens.append(("postgres", "uuidv7()", "uuidv7()"))
        gens += [("managed", "loop (floor), managed database", "g"),
                 ("managed", "nextval('seq'), managed database", "nextval('seq')"),
                 ("managed", "snowflake_nextval(), managed", "snowflake_nextval()")]
        samples = {name: [] for _, name, _ in gens}
        print(f"bench: managed, {n:,} calls in one statement, {REPS} repetitions", flush=True)
        for _ in range(REPS):
            for db, name, expr in gens:
                ms = timed_in(server, db, f"SELECT count(x) FROM (SELECT {expr} AS x FROM generate_series(1, {n}) g) t")
                samples[name].append(ms * 1e6 / n)
        b = {name: median(v) for name, v in samples.items()}
        print(b, flush=True)

        print(f"bench: managed, single-row INSERTs, {clients} clients, {seconds} s each", flush=True)
        tables = [("managed", "bigserial", "t_serial", "bigserial"),
                  ("managed", "snowflake_nextval(), managed", "t_managed", "bigint DEFAULT snowflake_nextval()"),
                  ("postgres", "snowflake_nextval(), native", "t_native", "bigint DEFAULT snowflake_nextval()")]
        for db, _, table, coltype in tables:
            sql_in(server, db, f"CREATE TABLE {table} (id {coltype} PRIMARY KEY, v int)")
        tps = {name: [] for _, name, _, _ in tables}
        for _ in range(REPS):
            for db, name, table, _ in tables:
                sql_in(server, db, f"TRUNCATE {table}; CHECKPOINT")
                tps[name].append(pgbench_in(server, db, f"INSERT INTO {table} (v) VALUES (1);", clients, seconds))
        t = {name: median(v) for name, v in tps.items()}
        print(t, flush=True)

        print(f"bench: managed, decoders over {MANAGED_DECODE_ROWS:,} IDs", flush=True)
        fill = (f"CREATE TABLE ids AS SELECT id, snowflake_to_base62(id) AS b62, snowflake_to_base32(id) AS b32 "
                f"FROM (SELECT (g::bigint << 22) | (g % 4096) AS id FROM generate_series(1, {MANAGED_DECODE_ROWS}) g) s")
        for db in ("postgres", "managed"):
            sql_in(server, db, fill)
            sql_in(server, db, "VACUUM ANALYZE ids")
        decoders = {
            "scan of id (floor)": "count(id)",
            "snowflake_timestamp(id)": "count(snowflake_timestamp(id))",
            "snowflake_worker_id(id)": "count(snowflake_worker_id(id))",
            "snowflake_decode(id)": "count(snowflake_decode(id))",
            "(snowflake_decode(id)).ts": "count((snowflake_decode(id)).ts)",
            "snowflake_timestamp(id, epoch, 10, 12)":
                "count(snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12))",
            "snowflake_to_base62(id)": "count(snowflake_to_base62(id))",
            "snowflake_to_base32(id)": "count(snowflake_to_base32(id))",
            "snowflake_from_base62(b62)": "count(snowflake_from_base62(b62))",
            "snowflake_from_base32(b32)": "count(snowflake_from_base32(b32))",
        }
        dec = {(db, name): [] for db in ("postgres", "managed") for name in decoders}
        for db in ("postgres", "managed"):
            timed_in(server, db, "SELECT count(id), count(b62), count(b32) FROM ids")  # into the cache
        for _ in range(REPS):
            for name, agg in decoders.items():
                for db in ("postgres", "managed"):
                    dec[(db, name)].append(timed_in(server, db, f"SELECT {agg} FROM ids") * 1e6 / MANAGED_DECODE_ROWS)
        # The fastest of the repetitions: these scans are CPU alone, and on a
        # shared machine the slower samples measure the neighbours.
        d = {key: min(v) for key, v in dec.items()}
    finally:
        server.stop()

    floor, mfloor = b["loop (floor)"], b["loop (floor), managed database"]
    seq, mseq = b["nextval('seq')"] - floor, b["nextval('seq'), managed database"] - mfloor
    managed = b["snowflake_nextval(), managed"] - mfloor
    bulk_rows = []
    for _, name, _ in gens:
        v = b[name]
        f, s = (mfloor, mseq) if "managed" in name else (floor, seq)
        if name.startswith("loop"):
            bulk_rows.append(f"| {name} | {v:.0f} | – | – |")
        else:
            bulk_rows.append(f"| {code(name)} | {v:.0f} | {v - f:.0f} | {(v - f) / s:.2f}× |")
    base = t["bigserial"]
    insert_rows = [f"| {code(name) if '(' in name else name} | {v:,.0f} | {v / base:.2f}× |" for name, v in t.items()]
    dec_rows = []
    for name in decoders:
        nat, man = d[("postgres", name)], d[("managed", name)]
        label = name if name.startswith("scan") else f"`{name}`"
        dec_rows.append(f"| {label} | {nat:.0f} | {man:.0f} | {man - nat:+.0f} |")
    verdicts = [f"per ID {managed / mseq:.2f}× `nextval()` (target at most 3×) → "
                + ("met" if managed <= 3 * mseq else "missed")]
    if "uuidv7()" in b:
        u7 = b["uuidv7()"] - floor
        verdicts.append(f"{managed:.0f} ns per ID against `uuidv7()`'s {u7:.0f} (target: cheaper) → "
                        + ("met" if managed < u7 else "missed"))
    else:
        verdicts.append("`uuidv7()` needs PostgreSQL 18: not measured on this server")
    ins = t["snowflake_nextval(), managed"] / base
    verdicts.append(f"single-row INSERTs at {ins:.2f}× bigserial's rate (target: within 10%) → "
                    + ("met" if ins >= 0.9 else "missed"))
    load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    section = "\n".join([
        MANAGED_BEGIN,
        "## 15. The managed edition beside the native one",
        "",
        f"Run on {datetime.date.today().isoformat()} by `{invocation('bash benches/managed.sh')}`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + f" ({machine()}), {version}, release build of the",
        "native library, one throwaway server with it preloaded: the native extension in one database, the managed",
        "edition (`dist/snowflake_id_plain.sql`, SQL and PL/pgSQL only, docs/managed.md) in another with a worker id",
        f"set; median of {REPS} repetitions, interleaved. Section 1's bulk statement ({n:,} calls), each edition's",
        "cost against `nextval()` in its own database:",
        "",
        "| generator | ns per row | ns per ID above the floor | cost vs nextval |",
        "|---|---:|---:|---:|",
        *bulk_rows,
        "",
        f"Single-row `INSERT ... VALUES` by pgbench, {clients} clients, {seconds} s each, into an emptied,",
        "checkpointed table whose primary key defaults to the generator (`-M prepared`, one row per transaction):",
        "",
        "| key | inserts per second | vs bigserial |",
        "|---|---:|---:|",
        *insert_rows,
        "",
        f"Decoding {MANAGED_DECODE_ROWS:,} stored IDs (`SELECT count(f(col)) FROM ids`, the table cached), ns per row",
        f"scan included, fastest of {REPS} (each a CPU-bound scan; the last column is what the managed edition",
        "adds to the native one's cost per row):",
        "",
        "| decoder | native | managed | managed − native |",
        "|---|---:|---:|---:|",
        *dec_rows,
        "",
        "Targets (the managed edition's): " + "; ".join(verdicts) + ".",
        f"Load average {load(load_before)} before, {load(os.getloadavg())} after.",
        MANAGED_END,
    ])
    write_section(MANAGED_BEGIN, MANAGED_END, section)
    print(section)


def quote(s):
    """An SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


def main():
    if sys.argv[1:2] == ["--past-instants"]:
        return past_instants_main(sys.argv[2])
    if sys.argv[1:2] == ["--text-forms"]:
        return text_forms_main(sys.argv[2])
    if sys.argv[1:2] == ["--blocks"]:
        return blocks_main(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000)
    if sys.argv[1:2] == ["--uuidv7"]:
        return uuidv7_main(sys.argv[2])
    if sys.argv[1:2] == ["--managed"]:
        return managed_main(sys.argv[2], sys.argv[3])
    if sys.argv[1:2] == ["--rekey"]:
        return rekey_main(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000)
    if sys.argv[1:2] == ["--majors"]:
        # major:bindir[:sha256 of the installed library]
        return majors_main([tuple((a.split(":", 2) + [""])[:3]) for a in sys.argv[2:]])
    DOCS.mkdir(exist_ok=True)
    server = Server()
    try:
        server.sql("CREATE EXTENSION snowflake_id; CREATE SEQUENCE seq;")
        for _, (table, coltype) in TABLES.items():
            server.sql(f"CREATE TABLE {table} (id {coltype} PRIMARY KEY, v int)")
        server.sql("SELECT snowflake_nextval(), nextval('seq'), gen_random_uuid()")
        pg_version = server.sql("SELECT version()")

        print("bench: bulk, 2,000,000 calls in one statement", flush=True)
        b = bulk(server)
        print("bench: decoding 1,000,000 stored IDs", flush=True)
        dec = decoding(server)
        print("bench: inserts, 1,000,000 rows", flush=True)
        ins1 = inserts(server, 1_000_000, REPS)
        ins10 = None
        if not QUICK:
            print("bench: inserts, 10,000,000 rows", flush=True)
            ins10 = inserts(server, 10_000_000, 1)
        clients_list = [1, 2, 4, 8, 16]
        print("bench: pgbench", flush=True)
        conc = concurrency(server, clients_list, 3 if QUICK else 5, 1 if QUICK else 3)
        print("bench: many sessions", flush=True)
        many = {n: many_sessions(server, n) for n in (2, 4)}
        issued, writes, by_keeper, active_s = server.sql(
            "SELECT ids_issued, mark_writes, mark_writes_by_keeper, round(extract(epoch FROM wall_clock - started_at))"
            " FROM snowflake_id_status"
        ).split("|")
    finally:
        server.stop()

    floor = b["loop (floor)"]
    above = {n: v - floor for n, v in b.items()}
    seq_cost = above["nextval('seq')"]
    lines = [
        "# Benchmarks",
        "",
        f"Run on {datetime.date.today().isoformat()} by `bash benches/run.sh`"
        + (" with `BENCH_QUICK=1`" if QUICK else "") + ".",
        f"Machine: {machine()}. Server: {pg_version.split(',')[0]}, release build of snowflake_id, "
        "default layout (10 worker bits, 12 sequence bits), one throwaway cluster, fsync on, `jit = off` "
        "(JIT compile time would be spread over the rows of every generator alike).",
        f"Each figure is the median of {REPS} repetitions (pgbench: {1 if QUICK else 3}), generators interleaved.",
        "This machine is shared and noisy: read the ratios, measured side by side in one run.",
        "",
        "## 1. Bulk: 2,000,000 calls in one statement",
        "",
        "`SELECT count(x) FROM (SELECT f() AS x FROM generate_series(1, 2000000) g) t`",
        "",
        "| generator | ns per row | ns per ID above the floor | IDs per second | cost vs nextval |",
        "|---|---:|---:|---:|---:|",
    ]
    for n, v in b.items():
        if n == "loop (floor)":
            lines.append(f"| {n} | {v:.0f} | – | {1e9 / v:,.0f} rows | – |")
        else:
            lines.append(f"| `{n}` | {v:.0f} | {above[n]:.0f} | {1e9 / v:,.0f} | {above[n] / seq_cost:.2f}× |")
    sf_rate = 1e9 / b["snowflake_nextval()"]
    ceiling = CEILING_PER_MS * 1000
    floor_rate = 1e9 / floor
    lines += [
        "",
        f"Layout ceiling with 12 sequence bits: {ceiling:,} IDs per second. "
        f"`snowflake_nextval()` reached {sf_rate / ceiling:.0%} of it "
        f"(the bare loop alone runs {floor_rate:,.0f} rows per second"
        + ("; the target applies since it is faster than the ceiling)." if floor_rate > ceiling else
           "; slower than the ceiling, so the 90% target does not apply)."),
        f"Target: at most half of `nextval` per ID above the floor: "
        f"{above['snowflake_nextval()'] / seq_cost:.2f}× → {'met' if above['snowflake_nextval()'] <= seq_cost / 2 else 'MISSED'}.",
        "",
        "## 2. Decoding: 1,000,000 stored IDs, one sequential scan",
        "",
        "Per ID above a bare `SELECT count(id) FROM ids`. The plain SQL expression is",
        "`to_timestamp(((id >> 22) + epoch_ms) / 1000.0)`, what a user writes without the extension.",
        "",
        "| decoding | ns per ID | above the scan | vs the plain expression |",
        "|---|---:|---:|---:|",
    ]
    scan = dec["scan (floor)"]
    expr = dec["plain SQL expression"] - scan
    for n, v in dec.items():
        if n == "scan (floor)":
            lines.append(f"| {n} | {v:.0f} | – | – |")
        else:
            lines.append(f"| `{n}` | {v:.0f} | {v - scan:.0f} | {(v - scan) / expr:.2f}× |")
    worst_composite = max(dec["(snowflake_decode(id)).ts"], dec["FROM ids, snowflake_decode(ids.id) d"]) - scan
    worst_scalar = max(dec[n] for n in DECODERS if n.startswith("snowflake_")) - scan
    lines += [
        "",
        f"Targets: the composite in both forms at most 1.5× the expression: {worst_composite / expr:.2f}× → "
        f"{'met' if worst_composite <= 1.5 * expr else 'MISSED'}; the scalar accessors at most 0.5×: "
        f"{worst_scalar / expr:.2f}× → {'met' if worst_scalar <= 0.5 * expr else 'MISSED'}.",
        "Both composite forms are inlined by the planner into accessor calls (see `EXPLAIN VERBOSE`); only",
        "asking for the whole composite value builds one per row.",
        "",
        "## 3. Inserts: `INSERT ... SELECT` into a table whose primary key defaults to the generator",
        "",
        "| generator | 1M rows (ms) | rows/s | vs bigserial | pkey index after 1M |"
        + (" 10M rows (ms) | pkey index after 10M |" if ins10 else ""),
        "|---|---:|---:|---:|---:|" + ("---:|---:|" if ins10 else ""),
    ]
    base = ins1["bigserial"][0]
    for n, (ms, size) in ins1.items():
        row = f"| {n} | {ms:,.0f} | {1e6 / ms * 1000:,.0f} | {base / ms:.2f}× speed | {size / 2**20:.1f} MiB |"
        if ins10:
            ms10, size10 = ins10[n]
            row += f" {ms10:,.0f} | {size10 / 2**20:.1f} MiB |"
        lines.append(row)
    lines += [
        "",
        "## 4. Concurrency: pgbench, prepared mode, 5 s per run",
        "",
        "One statement per transaction. The INSERT scripts run with `synchronous_commit = off`: with it on, every",
        "commit waits for the same WAL fsync and the figures measure the disk, not the generator.",
        "",
        "| script | " + " | ".join(f"{c} clients" for c in clients_list) + " |",
        "|---|" + "---:|" * len(clients_list),
    ]
    names = sorted({n for (n, _) in conc})
    for n in names:
        lines.append(f"| `{n}` | " + " | ".join(
            f"{conc[(n, c)][0]:,.0f} tps, {conc[(n, c)][1]:.3f} ms" for c in clients_list) + " |")
    lines += ["", "TPS of snowflake against nextval at each client count:", ""]
    for c in clients_list:
        s = conc[("SELECT snowflake_nextval()", c)][0] / conc[("SELECT nextval('seq')", c)][0]
        i = conc[("INSERT snowflake", c)][0] / conc[("INSERT bigserial", c)][0]
        lines.append(f"- {c} clients: SELECT {s:.2f}×, INSERT {i:.2f}× (vs bigserial)")
    lines += [
        "",
        "Single-row INSERT figures swing by about ±20% between 5-second runs on this machine (seen when",
        "re-measuring them interleaved), so differences of ±10% between the INSERT rows are within that",
        "spread; the SELECT rows differ by more than it.",
        "",
        "![TPS by clients](benchmarks-tps.png)",
        "",
        "## 5. Many sessions drawing at once: 1,000,000 IDs each",
        "",
        "| sessions | generator | total IDs per second | logical clock ahead after (ms) |",
        "|---:|---|---:|---:|",
    ]
    for s, res in many.items():
        for n, (rate, drift) in res.items():
            lines.append(f"| {s} | `{n}` | {rate:,.0f} | {drift if drift is not None else '–'} |")
    lines += [
        "",
        "## 6. The durable mark's cost",
        "",
        f"Over the whole run the generator issued {int(issued):,} IDs in {int(float(active_s)):,} s and wrote its",
        f"durable mark {int(writes):,} times, {int(by_keeper):,} of them by the mark keeper (the rest in queries that",
        f"found it late): {int(issued) / max(int(writes), 1):,.0f} IDs per fsync, never one per ID. Each write",
        "is also one 48-byte WAL record (the mark travels to standbys), flushed before IDs under it are returned.",
        "",
    ]
    report = "\n".join(lines)
    # benches/hook_cost.sh and benches/majors.sh own the sections between
    # their markers; keep them.
    path = DOCS / "benchmarks.md"
    if path.exists():
        old = path.read_text()
        for begin, end in (("<!-- hook-cost: begin", "<!-- hook-cost: end -->"), (MAJORS_BEGIN, MAJORS_END),
                           (BLOCKS_BEGIN, BLOCKS_END), (PAST_BEGIN, PAST_END), (REKEY_BEGIN, REKEY_END),
                           (UUIDV7_BEGIN, UUIDV7_END), (TEXT_BEGIN, TEXT_END), (MANAGED_BEGIN, MANAGED_END)):
            if begin in old and end in old:
                kept = old[old.index(begin) : old.index(end) + len(end)]
                report = report.rstrip("\n") + "\n\n" + kept + "\n"
    path.write_text(report)
    chart(conc, clients_list, DOCS / "benchmarks-tps.png")
    print(report)


if __name__ == "__main__":
    sys.exit(main())
