//! A bounded chaos soak: clients draw IDs while a primary with a
//! synchronous streaming standby is killed with `-9` and failed over, the
//! old primary is rebuilt as the new standby, and the servers' clocks step
//! back (by up to an hour, libfaketime, never the machine's clock) and are
//! later set right. A ledger of every call that returned an ID is checked
//! at the end: no ID twice, real-time order kept across servers (a call that
//! ended before another began returned only smaller IDs), and IDs near the
//! clock (invariant 7): no clock is ever set ahead of the real time, so no
//! ID may run more than `max_drift` plus one lease ahead of it.
//!
//! About 60 s by default; `SNOWFLAKE_CHAOS_SECS=600` soaks longer, and
//! `SNOWFLAKE_CHAOS_SEED` replays the random choices of an earlier run
//! (printed at the start).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use common::soak::{self, Rng};
use common::{draw_one_ahead, id_unix_ms, mark_ahead, wait_for_clock_offset, Cluster, FakeClock};

/// max_drift (1 s by default) + one lease (about 1 s) + slack for a noisy machine.
const BOUND_MS: i64 = 2_500;

/// Every standby is a synchronous primary once promoted: a failover then
/// never loses a mark the primary waited for.
const SYNC: &[&str] = &["synchronous_standby_names = '*'"];

/// A server of the soak, with its own libfaketime file.
struct Server {
    cluster: Cluster,
    clock: FakeClock,
    /// The offset set last, in seconds: 0 or negative, never ahead of real time.
    offset_s: i64,
    name: String,
}

impl Server {
    fn start(mut cluster: Cluster, name: String) -> Server {
        let clock = cluster.start_with_fake_clock("+0");
        Server { cluster, clock, offset_s: 0, name }
    }
    fn set_offset(&mut self, offset_s: i64) {
        assert!(offset_s <= 0, "a clock ahead of real time would make IDs legitimately run ahead");
        self.clock.set(&format!("{offset_s:+}"));
        self.offset_s = offset_s;
    }
}

/// One call that returned IDs: when the client sent it and got the answer.
#[derive(Clone, Copy)]
struct Call {
    start: Instant,
    end: Instant,
    min: i64,
    max: i64,
    client: usize,
    /// Which primary the client was connected to (0 the first, +1 per failover).
    primary: u32,
}

impl Call {
    /// For failure messages: times in seconds since the soak began.
    fn describe(&self, origin: Instant) -> String {
        let at = |t: Instant| t.duration_since(origin).as_secs_f64();
        format!(
            "client {} on primary #{} from {:.3} s to {:.3} s returned [{}, {}]",
            self.client,
            self.primary,
            at(self.start),
            at(self.end),
            self.min,
            self.max
        )
    }
}

struct Shared {
    /// The primary clients should use now, and its generation.
    primary: Mutex<(u32, postgres::Config)>,
    stop: AtomicBool,
}

/// Stops the clients whatever happens in the chaos loop, so that a panic
/// there ends the test instead of leaving clients running for ever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct ClientLog {
    calls: Vec<Call>,
    /// Every ID returned, for the duplicate check.
    ids: Vec<i64>,
    /// Failed calls by SQLSTATE, or "connection lost" without one.
    failed: HashMap<String, u64>,
    failed_connects: u64,
}

/// Draws `batch` IDs per call until told to stop, always from whichever
/// server is the primary now, reconnecting after any failure.
fn client(index: usize, batch: i32, shared: &Shared) -> ClientLog {
    let mut log = ClientLog::default();
    let mut conn: Option<(u32, postgres::Client, postgres::Statement)> = None;
    while !shared.stop.load(Ordering::SeqCst) {
        let (generation, mut cfg) = shared.primary.lock().clone();
        if conn.as_ref().is_some_and(|c| c.0 != generation) {
            conn = None;
        }
        if conn.is_none() {
            cfg.connect_timeout(Duration::from_secs(10)).options("-c statement_timeout=10s");
            let connected = cfg.connect(postgres::NoTls).and_then(|mut c| {
                let stmt = c.prepare("SELECT snowflake_nextval() FROM generate_series(1, $1::int)")?;
                Ok((c, stmt))
            });
            match connected {
                Ok((c, stmt)) => conn = Some((generation, c, stmt)),
                Err(_) => {
                    log.failed_connects += 1;
                    thread::sleep(Duration::from_millis(50));
                    continue;
                }
            }
        }
        let (primary, c, stmt) = conn.as_mut().expect("connected");
        let start = Instant::now();
        let result = c.query(&*stmt, &[&batch]);
        let end = Instant::now();
        match result {
            Ok(rows) => {
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                let (min, max) = (*ids.first().expect("IDs"), *ids.last().expect("IDs"));
                // Within one statement the order is the generator's own.
                assert!(ids.windows(2).all(|w| w[0] < w[1]), "client {index}: IDs of one call not increasing");
                log.calls.push(Call { start, end, min, max, client: index, primary: *primary });
                log.ids.extend(ids);
            }
            Err(e) => {
                let kind = e.as_db_error().map_or("connection lost".to_string(), |db| db.code().code().to_string());
                *log.failed.entry(kind).or_default() += 1;
                conn = None;
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
    log
}

/// The chaos events, with when they happened, to explain a failure.
struct Events {
    origin: Instant,
    list: Vec<(Instant, String)>,
}

impl Events {
    fn push(&mut self, what: String) {
        println!("[{:7.2} s] {what}", self.origin.elapsed().as_secs_f64());
        self.list.push((Instant::now(), what));
    }
    fn around(&self, t: Instant, window: Duration) -> String {
        self.list
            .iter()
            .filter(|(at, _)| *at + window >= t && *at <= t + window)
            .map(|(at, what)| format!("  [{:7.3} s] {what}", at.duration_since(self.origin).as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// No ID twice, and real-time order: every call that ended before another
/// began returned smaller IDs. `ids` holds every ID returned (IDs of
/// concurrent calls interleave, so ranges are not enough for duplicates).
fn check_ledger(calls: &[Call], ids: &mut [i64], events: &Events) -> Result<(), String> {
    let origin = events.origin;
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        let twice: Vec<&Call> = calls.iter().filter(|c| c.min <= w[0] && w[0] <= c.max).collect();
        let at = twice.first().map_or(origin, |c| c.start);
        let described: Vec<String> = twice.iter().map(|c| c.describe(origin)).collect();
        return Err(format!(
            "duplicate ID {}: calls\n{}\nevents:\n{}",
            w[0],
            described.join("\n"),
            events.around(at, Duration::from_secs(10))
        ));
    }
    let mut by_end = calls.to_vec();
    by_end.sort_by_key(|c| c.end);
    let mut by_start = calls.to_vec();
    by_start.sort_by_key(|c| c.start);
    // The call with the largest ID among those that ended before `c` began.
    let (mut p, mut running): (usize, Option<Call>) = (0, None);
    for c in &by_start {
        while p < by_end.len() && by_end[p].end < c.start {
            if running.is_none_or(|r| by_end[p].max > r.max) {
                running = Some(by_end[p]);
            }
            p += 1;
        }
        if let Some(r) = running.filter(|r| c.min <= r.max) {
            return Err(format!(
                "real-time order broken: {} ended before {} began, yet returned the larger ID\nevents:\n{}",
                r.describe(origin),
                c.describe(origin),
                events.around(c.start, Duration::from_secs(10))
            ));
        }
    }
    Ok(())
}

/// The ledger check itself catches what it must, on a made-up ledger.
#[test]
fn the_ledger_check_catches_a_duplicate_and_an_order_violation() {
    let events = Events { origin: Instant::now(), list: Vec::new() };
    let t = |ms: u64| events.origin + Duration::from_millis(ms);
    let call = |start, end, id, client| Call { start: t(start), end: t(end), min: id, max: id, client, primary: 0 };
    // Overlapping calls may return IDs in either order.
    let fine = [call(0, 10, 5, 0), call(5, 20, 3, 1), call(21, 30, 6, 0)];
    assert_eq!(check_ledger(&fine, &mut [5, 3, 6], &events), Ok(()));
    // A call that began after another ended returned a smaller ID.
    let late = [call(0, 10, 5, 0), call(11, 20, 4, 1)];
    let e = check_ledger(&late, &mut [5, 4], &events).expect_err("order violation missed");
    assert!(e.starts_with("real-time order broken"), "{e}");
    // The same ID twice, inside a burst of another call.
    let twice = [Call { start: t(0), end: t(10), min: 1, max: 9, client: 0, primary: 0 }, call(2, 3, 4, 1)];
    let e = check_ledger(&twice, &mut [1, 4, 9, 4], &events).expect_err("duplicate missed");
    assert!(e.starts_with("duplicate ID 4"), "{e}");
}

#[test]
fn failovers_and_clock_steps_under_load_keep_ids_unique_ordered_and_near_the_clock() {
    let (secs, seed) = soak::settings("chaos soak", 60);
    let mut rng = Rng(seed);

    let first = Cluster::init(&["shared_preload_libraries = 'snowflake_id'", "snowflake_id.worker_id = 9"]);
    let mut primary = Server::start(first, "server 0".into());
    primary.cluster.sql("CREATE EXTENSION snowflake_id");
    let probe = primary.cluster.query_i64("SELECT snowflake_nextval()");
    let decoded =
        primary.cluster.query_i64(&format!("SELECT (extract(epoch FROM snowflake_timestamp({probe})) * 1000)::int8"));
    assert_eq!(id_unix_ms(probe), decoded, "the soak assumes the default layout");
    let mut servers_made = 1;
    let mut standby = Server::start(Cluster::standby_of(&primary.cluster, SYNC), "server 1".into());
    servers_made += 1;
    // Synchronous from here on (standbys have it in their own configuration).
    primary.cluster.make_synchronous(&standby.cluster);

    let shared = Shared { primary: Mutex::new((0, primary.cluster.config())), stop: AtomicBool::new(false) };
    // Real time of an Instant, for comparing IDs with the machine's clock.
    let (origin, origin_unix_ms) =
        (Instant::now(), SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis() as i64);
    let unix_ms = |t: Instant| origin_unix_ms + t.duration_since(origin).as_millis() as i64;
    let mut events = Events { origin, list: Vec::new() };
    let (mut failovers, mut steps_back, mut set_right) = (0u32, 0u32, 0u32);
    let mut failover_secs = Vec::new();
    // IDs the chaos loop drew itself (client 99), part of the ledger.
    let mut own_calls: Vec<Call> = Vec::new();

    // The closure takes the standby (a failover moves it into `primary`) and
    // hands it back: dropped with the closure, it would be stopped before the
    // last draw, which then waits for ever for a synchronous standby that is
    // gone whenever it needs a new mark (seen on a loaded machine).
    let (logs, clocks_right_at, _standby) = thread::scope(|s| {
        let shared = &shared;
        let clients: Vec<_> = (0..4)
            .map(|i| {
                // One client draws bursts, the others one ID per call.
                let batch = if i == 0 { 500 } else { 1 };
                s.spawn(move || client(i, batch, shared))
            })
            .collect();
        let _stop = StopOnDrop(&shared.stop);
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut generation = 0u32;
        while Instant::now() < deadline {
            thread::sleep(Duration::from_millis(rng.range(500, 2000)));
            // Each server's clock: stepped back by up to an hour, or set right.
            for (role, server) in [("primary", &mut primary), ("standby", &mut standby)] {
                if !rng.coin() {
                    continue;
                }
                if server.offset_s == 0 {
                    let back = rng.range(1, 3600) as i64;
                    server.set_offset(-back);
                    steps_back += 1;
                    events.push(format!("{} ({role}) clock stepped back {back} s", server.name));
                } else {
                    server.set_offset(0);
                    set_right += 1;
                    events.push(format!("{} ({role}) clock set right", server.name));
                }
            }
            thread::sleep(Duration::from_millis(rng.range(500, 2000)));
            if Instant::now() >= deadline {
                break;
            }

            // Failover: kill -9 the primary, promote the standby, rebuild the old primary as the new standby.
            let began = Instant::now();
            events.push(format!("{} (primary, clock {} s) kill -9", primary.name, primary.offset_s));
            primary.cluster.crash();
            events.push(format!("{} (standby, clock {} s) promote", standby.name, standby.offset_s));
            standby.cluster.promote();
            let old = std::mem::replace(&mut primary, standby);
            generation += 1;
            *shared.primary.lock() = (generation, primary.cluster.config());
            events.push(format!("{} is the primary now; clients go there", primary.name));
            drop(old);
            let name = format!("server {servers_made}");
            servers_made += 1;
            standby = Server::start(Cluster::standby_of(&primary.cluster, SYNC), name);
            primary.cluster.wait_sync_standby(&standby.cluster);
            failovers += 1;
            failover_secs.push(began.elapsed().as_secs_f64());
            events.push(format!("{} rebuilt from {} and synchronous", standby.name, primary.name));
            // One ID from the chaos loop itself: how far ahead this failover left IDs.
            let mut cfg = primary.cluster.config();
            cfg.options("-c statement_timeout=10s");
            let start = Instant::now();
            let drawn = cfg.connect(postgres::NoTls).and_then(|mut c| c.query_one("SELECT snowflake_nextval()", &[]));
            let end = Instant::now();
            match drawn {
                Ok(row) => {
                    let id: i64 = row.get(0);
                    own_calls.push(Call { start, end, min: id, max: id, client: 99, primary: generation });
                    let ahead = (id_unix_ms(id) - unix_ms(end)) as f64 / 1000.0;
                    events.push(format!("{} issues IDs {ahead:.1} s ahead of the real time", primary.name));
                }
                Err(e) => events.push(format!("{} failed to issue an ID: {}", primary.name, common::describe(&e))),
            }
        }

        // All clocks right, and seen right by the servers, before the last draws.
        for server in [&mut primary, &mut standby] {
            if server.offset_s != 0 {
                server.set_offset(0);
                set_right += 1;
            }
        }
        wait_for_clock_offset(&primary.cluster, 0.0);
        standby.cluster.wait_accepting();
        wait_for_clock_offset(&standby.cluster, 0.0);
        let clocks_right_at = Instant::now();
        events.push("all clocks right".into());
        thread::sleep(Duration::from_secs(2));
        shared.stop.store(true, Ordering::SeqCst);
        let logs: Vec<ClientLog> = clients.into_iter().map(|h| h.join().expect("client")).collect();
        (logs, clocks_right_at, standby)
    });

    // IDs drawn now that every clock is right.
    let mut c = primary.cluster.connect();
    // Bounded: a synchronous standby lost here would make this wait for ever.
    c.batch_execute("SET statement_timeout = '60s'").expect("statement_timeout");
    let (last_id, final_ahead) = draw_one_ahead(&mut c);
    let final_mark = mark_ahead(&mut c).expect("mark");

    let calls: Vec<Call> = logs.iter().flat_map(|l| l.calls.iter().copied()).chain(own_calls.iter().copied()).collect();
    let mut failed: BTreeMap<String, u64> = BTreeMap::new();
    for l in &logs {
        for (k, v) in &l.failed {
            *failed.entry(k.clone()).or_default() += v;
        }
    }
    let failed_calls: u64 = failed.values().sum();
    let failed_connects: u64 = logs.iter().map(|l| l.failed_connects).sum();
    let mut all_ids: Vec<i64> =
        logs.iter().flat_map(|l| l.ids.iter().copied()).chain(own_calls.iter().map(|c| c.min)).collect();
    let id_count = all_ids.len() as u64;

    // How far IDs ran ahead of the real time: against the end of the call,
    // so a figure above the bound is certainly too far ahead.
    let ahead_ms = |c: &Call| id_unix_ms(c.max) - unix_ms(c.end);
    let worst_ahead = calls.iter().max_by_key(|c| ahead_ms(c)).copied();
    let after_right: Vec<&Call> = calls.iter().filter(|c| c.start > clocks_right_at).collect();
    let worst_after_right = after_right.iter().map(|c| ahead_ms(c)).max();

    println!(
        "chaos soak ({secs} s, seed {seed}): {id_count} IDs in {} calls, {failovers} failovers (each {}), \
         {steps_back} clock steps back and {set_right} set right, {failed_calls} failed calls {failed:?}, \
         {failed_connects} failed connection attempts",
        calls.len(),
        failover_secs.iter().map(|s| format!("{s:.1} s")).collect::<Vec<_>>().join(", "),
    );
    println!(
        "IDs ahead of the real time: at most {} ms over the soak; after the clocks were right {} ms over {} calls; \
         a new ID at the end {final_ahead:.3} s, the mark {final_mark:.3} s",
        worst_ahead.map_or(0, |c| ahead_ms(&c)),
        worst_after_right.unwrap_or(0),
        after_right.len()
    );

    if let Err(e) = check_ledger(&calls, &mut all_ids, &events) {
        panic!("{e}");
    }
    assert!(last_id > calls.iter().map(|c| c.max).max().unwrap_or(0), "the last ID is not above the ledger");

    // Near the clock: no clock was ever ahead of the real time.
    assert!(!after_right.is_empty(), "no call returned after the clocks were set right");
    assert!(id_count > 1_000, "the clients drew too little: {id_count}");
    if let Some(c) = worst_ahead {
        assert!(
            ahead_ms(&c) <= BOUND_MS,
            "{}: that ID is {} ms ahead of the real time (bound {BOUND_MS} ms)\nevents:\n{}",
            c.describe(origin),
            ahead_ms(&c),
            events.around(c.start, Duration::from_secs(30))
        );
    }
    let bound_s = BOUND_MS as f64 / 1000.0;
    assert!(final_ahead <= bound_s, "with every clock right a new ID is {final_ahead:.1} s ahead");
    assert!(final_mark <= bound_s, "with every clock right the mark is {final_mark:.1} s ahead");
}
