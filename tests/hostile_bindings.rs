//! Calls bound when created (since 0.7.0; mission invariant 11: no role stops
//! our work for others). An ordinary role `app` (LOGIN, not a superuser,
//! CREATE on `public`, where the extension lives) plants,
//! beside the extension's functions, look-alikes that no exactly typed call
//! would pick but that make such a call "not unique" (42725): one more
//! argument with a DEFAULT. Before 0.7.0 the registry's PL/pgSQL bodies,
//! `snowflake_convert()` and the node's libpq session resolved their calls
//! by name at run time, so one plant stopped every node's lease at its next
//! reconnect and every history claim and re-key at once.
//!
//! Each plant is first shown to work (a positive control, so that a plant
//! broken by a typo fails the test instead of passing it): `app` calls the
//! look-alike itself and `public.hostile_calls` records it, and the call
//! the extension made before 0.7.0, made by name as `app`, fails with
//! 42725. Then the extension's work goes on: a node keeps its lease across
//! a reconnect of its keeper's registry session (its backend terminated on
//! the registry), a new node acquires, history claims (past-instant IDs)
//! succeed, a re-key runs, and no look-alike was called by anyone but
//! `app`.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{describe, Cluster};
use postgres::{Client, NoTls};

/// The role, its right to create in `public`, and the recorder every
/// look-alike calls: a row in `public.hostile_calls` and a WARNING.
const SETUP: &str = "
CREATE ROLE app LOGIN NOSUPERUSER;
GRANT CREATE ON SCHEMA public TO app;
CREATE TABLE public.hostile_calls (
    at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    fn text NOT NULL,
    session_role_name name);
GRANT SELECT, INSERT ON public.hostile_calls TO PUBLIC;
CREATE FUNCTION public.hostile_note(fn text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $n$
BEGIN
    RAISE WARNING '%', format('HOSTILE%sCALL %s as %s (session %s)', '_', fn, current_user, session_user);
    INSERT INTO public.hostile_calls (fn, session_role_name) VALUES (fn, session_user);
END
$n$;";

/// A look-alike: what `app` creates, `app`'s own call of it for the
/// positive control, and the call by name the extension made before 0.7.0
/// that it makes "not unique" (none for a name the extension never calls).
struct Plant {
    create: &'static str,
    control: &'static str,
    unbound: Option<&'static str>,
}

/// A function of any `snowflake_registry_` name with a defaulted argument:
/// 0.6.0's node refused every registry session over it (its tripwire).
const REGISTRY_X: Plant = Plant {
    create: "CREATE FUNCTION public.snowflake_registry_x(i integer DEFAULT 0) RETURNS integer
                 LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_x'); RETURN 1; END $f$",
    control: "SELECT public.snowflake_registry_x()",
    unbound: None,
};

/// One more defaulted argument on the helpers the registry's SECURITY
/// DEFINER bodies called by name: renewals, history claims and grants
/// failed "not unique" in every new session. The helpers now live in
/// snowflake_id_internal alone, so a plant of their names in the extension's
/// schema is no look-alike of anything: no call by name to make ambiguous.
const CHECK_HOLDER: Plant = Plant {
    create: "CREATE FUNCTION public.snowflake_registry_check_holder(
                 namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, x integer DEFAULT 0)
                 RETURNS void
                 LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_check_holder(+x)'); END $f$",
    control: "SELECT public.snowflake_registry_check_holder('n'::text, 0, 1::bigint, 1::bigint, 1)",
    unbound: None,
};

const FREE: Plant = Plant {
    create: "CREATE FUNCTION public.snowflake_registry_free(
                 l public.snowflake_registry_leases, stale_margin interval, at timestamptz, x integer DEFAULT 0)
                 RETURNS boolean
                 LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_free(+x)'); RETURN true; END $f$",
    control: "SELECT public.snowflake_registry_free(NULL::public.snowflake_registry_leases, interval '1 s', now(), 1)",
    unbound: None,
};

/// The same on the functions the node itself calls over libpq: its calls
/// of them in the extension's schema, by name and exact types, were "not
/// unique" with these beside them.
const NODE_CALLS: [Plant; 4] = [
    Plant {
        create: "CREATE FUNCTION public.snowflake_registry_renew(a text, b integer, c bigint, d bigint, e bigint,
                     f bigint, x integer DEFAULT 0) RETURNS bigint
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_renew(+x)');
                     RETURN 0; END $f$",
        control: "SELECT public.snowflake_registry_renew('n', 0, 1, 1, 1, 1, 1)",
        unbound: Some("SELECT public.snowflake_registry_renew('n'::text, 0, 1::bigint, 1::bigint, 1::bigint, 1::bigint)"),
    },
    Plant {
        create: "CREATE FUNCTION public.snowflake_registry_release(a text, b integer, c bigint, d bigint, e bigint,
                     x integer DEFAULT 0) RETURNS boolean
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_release(+x)');
                     RETURN true; END $f$",
        control: "SELECT public.snowflake_registry_release('n', 0, 1, 1, 1, 1)",
        unbound: Some("SELECT public.snowflake_registry_release('n'::text, 0, 1::bigint, 1::bigint, 1::bigint)"),
    },
    Plant {
        create: "CREATE FUNCTION public.snowflake_registry_history_of(a text, b integer, c bigint, d bigint,
                     x integer DEFAULT 0) RETURNS SETOF bigint
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_history_of(+x)');
                     END $f$",
        control: "SELECT public.snowflake_registry_history_of('n', 0, 1, 1, 1)",
        unbound: Some("SELECT public.snowflake_registry_history_of('n'::text, 0, 1::bigint, 1::bigint)"),
    },
    Plant {
        create: "CREATE FUNCTION public.snowflake_registry_record_history(a text, b integer, c bigint, d bigint,
                     e bigint, f bigint, g integer, x integer DEFAULT 0) RETURNS void
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_registry_record_history(+x)');
                     END $f$",
        control: "SELECT public.snowflake_registry_record_history('n', 0, 1, 1, 1, 2, 1, 1)",
        unbound: Some(
            "SELECT public.snowflake_registry_record_history('n'::text, 0, 1::bigint, 1::bigint, 1::bigint, 2::bigint, 1)",
        ),
    },
];

/// The same on what `snowflake_convert()` called by name: its epoch check,
/// its bound for new IDs, the generator of its re-key map.
const CONVERT_PLANTS: [Plant; 3] = [
    Plant {
        create: "CREATE FUNCTION public.snowflake_timestamp(id bigint, x integer DEFAULT 0) RETURNS timestamptz
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_timestamp(+x)');
                     RETURN now(); END $f$",
        control: "SELECT public.snowflake_timestamp(0::bigint, 1)",
        unbound: Some("SELECT public.snowflake_timestamp(0::bigint)"),
    },
    Plant {
        create: "CREATE FUNCTION public.snowflake_from_timestamp(ts timestamptz, x integer DEFAULT 0) RETURNS bigint
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_from_timestamp(+x)');
                     RETURN 0; END $f$",
        control: "SELECT public.snowflake_from_timestamp(now(), 1)",
        unbound: Some("SELECT public.snowflake_from_timestamp(now())"),
    },
    Plant {
        create: "CREATE FUNCTION public.snowflake_nextval_at(ts timestamptz, x integer DEFAULT 0) RETURNS bigint
                     LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hostile_note('snowflake_nextval_at(+x)');
                     RETURN 0; END $f$",
        control: "SELECT public.snowflake_nextval_at(now(), 1)",
        unbound: Some("SELECT public.snowflake_nextval_at(now() - interval '1 day')"),
    },
];

fn app_client(cluster: &Cluster) -> Client {
    let mut cfg = cluster.config();
    cfg.user("app").dbname("postgres");
    cfg.connect(NoTls).unwrap_or_else(|e| panic!("connect as app: {e}"))
}

/// Plants each look-alike as `app` and proves it: `app`'s own call is
/// recorded, and the call by name the extension used to make is "not
/// unique" (42725). The control's rows are then cleared, so that any row
/// left at the end is a call the extension made.
fn plant(cluster: &Cluster, plants: &[&Plant]) {
    let mut app = app_client(cluster);
    for p in plants {
        app.batch_execute(p.create).unwrap_or_else(|e| panic!("plant {}: {}", p.create, describe(&e)));
        let before = cluster.query_i64("SELECT count(*) FROM public.hostile_calls");
        app.batch_execute(p.control).unwrap_or_else(|e| panic!("control {}: {}", p.control, describe(&e)));
        let after = cluster.query_i64("SELECT count(*) FROM public.hostile_calls WHERE session_role_name = 'app'");
        assert_eq!(after, before + 1, "the look-alike did not record app's own call: {}", p.control);
        if let Some(unbound) = p.unbound {
            match app.batch_execute(unbound) {
                Err(e) if e.code().map(|c| c.code()) == Some("42725") => {}
                other => panic!("the call by name is not made ambiguous by the plant ({unbound}): {other:?}"),
            }
        }
    }
    cluster.sql("DELETE FROM public.hostile_calls");
}

/// Calls of a look-alike made by anyone (the control's were cleared).
fn calls(cluster: &Cluster) -> Vec<String> {
    let mut c = cluster.connect();
    c.query("SELECT fn || ' (session ' || session_role_name || ')' FROM public.hostile_calls ORDER BY at", &[])
        .expect("read hostile_calls")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A registry with `app` and its recorder, and the extension.
fn registry() -> Cluster {
    let mut registry = Cluster::init(&[]);
    registry.start();
    registry.sql("CREATE EXTENSION snowflake_id");
    registry.sql(SETUP);
    registry
}

/// A node leasing from `registry` with a 3 s lease (renewed about every
/// second), started, extension created.
fn node(registry: &Cluster, name: &str) -> Cluster {
    Cluster::leased_node(registry, name, &["snowflake_id.worker_id = 'auto'", "snowflake_id.registry_lease = '3s'"])
}

/// Waits until `node` holds its lease and has renewed it after `since`
/// (the registry's clock, text), within `within`.
fn wait_renewed_after(node: &Cluster, registry: &Cluster, since: &str, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let renewed = registry.query_i64(&format!(
            "SELECT count(*) FROM snowflake_registry_leases
              WHERE node_name = '{}' AND released_at IS NULL AND renewed_at > '{since}'::timestamptz",
            node_name(node)
        ));
        let state = node.query_text("SELECT lease_state FROM snowflake_id_status");
        if renewed == 1 && state == "held" {
            return Ok(());
        }
        if Instant::now() > deadline {
            let error = node.query_text("SELECT coalesce(registry_error, '') FROM snowflake_id_status");
            return Err(format!("no renewal after {since} within {within:?}: lease {state}, registry_error {error:?}"));
        }
        thread::sleep(Duration::from_millis(200));
    }
}

fn node_name(node: &Cluster) -> String {
    node.query_text("SELECT current_setting('snowflake_id.node_name')")
}

/// Ends every registry session of the nodes (the keeper's, any claim's):
/// the keeper must open a new one to renew.
fn cut_sessions(registry: &Cluster) -> String {
    let at = registry.query_text("SELECT clock_timestamp()::text");
    let cut = registry.query_i64(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
          WHERE application_name LIKE 'snowflake\\_id %' AND pid <> pg_backend_pid()",
    );
    assert!(cut >= 1, "no registry session of a node to end");
    at
}

/// The lease goes on across a reconnect, and history claims succeed:
/// collected as violations.
fn lease_and_claims_go_on(node: &Cluster, registry: &Cluster, violations: &mut Vec<String>) {
    if let Err(e) = wait_renewed_after(node, registry, "-infinity", Duration::from_secs(30)) {
        violations.push(format!("no lease at first: {e}"));
        return;
    }
    let at = cut_sessions(registry);
    if let Err(e) = wait_renewed_after(node, registry, &at, Duration::from_secs(15)) {
        violations.push(format!("after the keeper's registry session was ended: {e}"));
    }
    let mut c = node.connect();
    for back in ["1 day", "2 days"] {
        if let Err(e) = c.query_one(&format!("SELECT snowflake_nextval_at(now() - interval '{back}')"), &[]) {
            violations.push(format!("a history claim failed: {}", describe(&e)));
        }
    }
    match c.query_one("SELECT count(snowflake_nextval()) FROM generate_series(1, 100)", &[]) {
        Ok(r) if r.get::<_, i64>(0) == 100 => {}
        other => violations.push(format!("live IDs: {other:?}")),
    }
}

/// `public.snowflake_registry_x(i int
/// DEFAULT 0)` in the registry's database. The node keeps renewing across
/// a reconnect and claims history; the look-alike is named in a WARNING in
/// the node's log, and never called.
#[test]
fn a_defaulted_registry_look_alike_stops_no_lease() {
    let registry = registry();
    plant(&registry, &[&REGISTRY_X]);
    let mut node = node(&registry, "bound-x");
    let mut violations = vec![];
    lease_and_claims_go_on(&node, &registry, &mut violations);
    violations.extend(calls(&registry).into_iter().map(|c| format!("look-alike called: {c}")));
    node.stop();
    if !node.log().contains("snowflake_registry_x(integer), owned by role app") {
        violations.push("the node's log does not name the look-alike in a WARNING".into());
    }
    assert!(violations.is_empty(), "{}\n{}", violations.join("\n"), node.log());
}

/// Overloads of the registry's helpers with one more defaulted argument, and
/// of the functions the node calls: renewals (check_holder), history claims
/// (check_holder) and grants (free) go on: the first node renews across a
/// reconnect and claims history, a second node acquires.
#[test]
fn overloads_of_the_registry_helpers_stop_no_lease_and_no_claim() {
    let registry = registry();
    let mut plants = vec![&CHECK_HOLDER, &FREE];
    plants.extend(NODE_CALLS.iter());
    plant(&registry, &plants);
    let mut node_a = node(&registry, "bound-a");
    let mut violations = vec![];
    lease_and_claims_go_on(&node_a, &registry, &mut violations);
    let mut node_b = node(&registry, "bound-b");
    if let Err(e) = wait_renewed_after(&node_b, &registry, "-infinity", Duration::from_secs(30)) {
        violations.push(format!("a second node did not acquire: {e}"));
    }
    node_b.stop();
    node_a.stop();
    violations.extend(calls(&registry).into_iter().map(|c| format!("look-alike called: {c}")));
    assert!(violations.is_empty(), "{}\n{}\n{}", violations.join("\n"), node_a.log(), node_b.log());
}

/// Overloads with one more defaulted argument of what snowflake_convert()
/// calls: a re-key of app's own table by app still runs, with the
/// extension's functions, and calls no look-alike.
#[test]
fn overloads_of_what_convert_calls_stop_no_conversion() {
    let node = Cluster::preloaded(&["snowflake_id.worker_id = 9"]);
    node.sql(SETUP);
    node.sql("GRANT EXECUTE ON FUNCTION snowflake_nextval_at(timestamptz) TO app");
    plant(&node, &CONVERT_PLANTS.iter().collect::<Vec<_>>());
    let mut app = app_client(&node);
    app.batch_execute(
        "CREATE TABLE public.customers (id serial PRIMARY KEY, created_at timestamptz NOT NULL);
         INSERT INTO public.customers (created_at)
              SELECT now() - interval '1 day' * g FROM generate_series(1, 50) g;",
    )
    .expect("app's table");
    // The DEFAULT snowflake_convert() sets names snowflake_nextval() by name
    // (docs/security.md); that one is not planted here.
    let converted = app.query("SELECT snowflake_convert('public.customers', 'id', rekey_by => 'created_at')", &[]);
    let mut violations = vec![];
    if let Err(e) = &converted {
        violations.push(format!("snowflake_convert failed: {}", describe(e)));
    } else {
        // Read through snowflake_id_internal's decoder: a
        // call by name of snowflake_timestamp is ambiguous here now.
        let wrong = node.query_i64(
            "SELECT count(*) FROM public.customers
              WHERE NOT snowflake_id_internal.snowflake_timestamp(id) BETWEEN date_trunc('milliseconds', created_at)
                        AND date_trunc('milliseconds', created_at) + interval '3 ms'",
        );
        if wrong != 0 {
            violations.push(format!("{wrong} re-keyed rows do not tell their row's time"));
        }
    }
    violations.extend(calls(&node).into_iter().map(|c| format!("look-alike called: {c}")));
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// Trust rule 1 (docs/security.md): CREATE EXTENSION says which roles other
/// than the schema's owner and superusers may create where it installs,
/// and says nothing where only the owner may.
#[test]
fn an_install_names_the_roles_that_may_create_in_its_schema() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 10"]);
    cluster.sql("CREATE ROLE app LOGIN");
    cluster.sql("CREATE DATABASE closed");
    let warned = |db: &str| {
        let mut cfg = cluster.config();
        cfg.dbname(db);
        let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = notices.clone();
        cfg.notice_callback(move |n| sink.lock().unwrap().push(format!("{}: {}", n.severity(), n.message())));
        let mut c = cfg.connect(NoTls).expect("connect");
        c.batch_execute("CREATE EXTENSION snowflake_id").unwrap_or_else(|e| panic!("{db}: {}", describe(&e)));
        let found =
            notices.lock().unwrap().iter().filter(|n| n.contains("may create in it")).cloned().collect::<Vec<_>>();
        found
    };
    assert_eq!(warned("closed"), Vec::<String>::new(), "PostgreSQL 15's public: only its owner creates");
    cluster.sql("GRANT CREATE ON SCHEMA public TO app");
    let found = warned("postgres");
    assert!(
        found.len() == 1 && found[0].starts_with("WARNING") && found[0].ends_with("may create in it: app"),
        "{found:?}"
    );
}

/// `ALTER DEFAULT PRIVILEGES ... GRANT
/// CREATE ON SCHEMAS` applied to `snowflake_id_internal` as CREATE EXTENSION
/// made it, and a look-alike `app` put there made the node's calls "not
/// unique". The install takes every grant but the owner's off the schema.
/// Positive control: a schema the same role creates just before is open to
/// `app`, so the default privilege is in force.
#[test]
fn default_privileges_do_not_open_the_internal_schema() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 11"]);
    cluster.sql("CREATE ROLE app LOGIN");
    cluster.sql("ALTER DEFAULT PRIVILEGES GRANT CREATE ON SCHEMAS TO app");
    cluster.sql("CREATE SCHEMA control");
    cluster.sql("CREATE EXTENSION snowflake_id");
    let mut app = app_client(&cluster);
    app.batch_execute("CREATE FUNCTION control.f() RETURNS integer LANGUAGE sql RETURN 1").unwrap_or_else(|e| {
        panic!("the control: app may not create in a schema made under the default privilege: {}", describe(&e))
    });
    let err = app
        .batch_execute("CREATE FUNCTION snowflake_id_internal.f() RETURNS integer LANGUAGE sql RETURN 1")
        .expect_err("app created a function in snowflake_id_internal");
    assert_eq!(err.code(), Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE), "{}", describe(&err));
    let acl: String = cluster
        .connect()
        .query_one(
            "SELECT pg_catalog.array_to_string(nspacl, ',') FROM pg_catalog.pg_namespace \
              WHERE nspname OPERATOR(pg_catalog.=) 'snowflake_id_internal'",
            &[],
        )
        .expect("acl")
        .get(0);
    assert!(!acl.contains("app="), "{acl}");
}

/// How many look-alikes [`a_catalog_of_look_alikes_costs_no_lease_and_one_short_line`]
/// plants, each of 100 arguments of a type with a 63-character name: about
/// 7 kB of signature apiece, so that a list of every one (what 0.7.0's first
/// cut put in one WARNING, in the session's required setup) is tens of
/// megabytes.
const MANY: i64 = 3000;

/// A node names the functions
/// of another role beside the registry's, but `app` decides how many and
/// how long. Naming them is bounded (a count and five names cut short),
/// separate from the session's setup and never a reason to stop: the node
/// keeps its lease across a reconnect and claims history, and its log gets
/// one short line with the count.
#[test]
fn a_catalog_of_look_alikes_costs_no_lease_and_one_short_line() {
    let registry = registry();
    let mut app = app_client(&registry);
    let long_type = format!("public.{}", "t".repeat(63));
    let started = Instant::now();
    app.batch_execute(&format!(
        "CREATE DOMAIN {long_type} AS integer;
         DO $d$ BEGIN
           FOR i IN 1..{MANY} LOOP
             EXECUTE pg_catalog.format('CREATE FUNCTION public.snowflake_registry_p%s(%s) RETURNS integer
                                        LANGUAGE sql AS ''SELECT 1''', i,
                                       (SELECT pg_catalog.string_agg('{long_type}', ', ') FROM generate_series(1, 100)));
           END LOOP;
         END $d$"
    ))
    .unwrap_or_else(|e| panic!("plant: {}", describe(&e)));
    // The positive control: the plants exist, are app's, and the list the
    // unbounded query would have built is huge.
    let mut c = registry.connect();
    c.batch_execute("SET search_path = pg_catalog, pg_temp").expect("search_path");
    let started_list = Instant::now();
    let row = c
        .query_one(
            "SELECT count(*), sum(length(format('function %s, owned by role %s', p.oid::regprocedure,
                                                p.proowner::regrole)))::bigint
               FROM pg_proc p WHERE p.proname LIKE 'snowflake\\_registry\\_p%' AND p.proowner = 'app'::regrole",
            &[],
        )
        .expect("count the plants");
    let (planted, listed): (i64, i64) = (row.get(0), row.get(1));
    eprintln!(
        "planted {planted} in {:?}; the unbounded list: {listed} characters in {:?}",
        started.elapsed(),
        started_list.elapsed()
    );
    assert_eq!(planted, MANY, "the plants are not there");
    assert!(listed > 10_000_000, "the unbounded list would be only {listed} characters");
    let mut node = node(&registry, "bound-many");
    let mut violations = vec![];
    lease_and_claims_go_on(&node, &registry, &mut violations);
    node.stop();
    let log = node.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("under the registry's names")).collect();
    match lines.as_slice() {
        [] => violations.push("the node's log does not name the look-alikes".into()),
        found => {
            for line in found {
                if line.len() > 2000 {
                    violations.push(format!("a WARNING of {} characters: {}...", line.len(), &line[..300]));
                } else if !line.contains(&format!("has {MANY} function(s)"))
                    || !line.contains("and 2995 more")
                    || !line.contains("..., owned by role app")
                {
                    violations.push(format!("the WARNING does not say how many: {line}"));
                }
            }
        }
    }
    if log.len() > 1_000_000 {
        violations.push(format!("the node's log is {} bytes", log.len()));
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
