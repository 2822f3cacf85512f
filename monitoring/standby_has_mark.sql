-- Does a standby have the durable mark? Run on the primary; one row, always.
--
-- standby_has_mark is false when no physical standby streams, when its flush
-- position is unknown (NULL: a role without pg_monitor or pg_read_all_stats
-- sees NULL there, so run it as one), or when every standby has flushed less
-- WAL than the newest mark record (mark_lsn). Flushed, not replayed: a
-- promoted standby replays every record it flushed before it issues an ID,
-- and the wait for synchronous standbys waits for the same flush position.
-- Logical subscribers are not standbys (they never get the mark) and are
-- left out. Only a standby that has the mark can take over without repeating
-- IDs: alert when standby_has_mark is false and in_recovery is false.
SELECT x.standbys_with_mark > 0 AS standby_has_mark,
       x.standbys,
       x.standbys_with_mark,
       x.sync_standbys_with_mark,
       x.bytes_behind,
       s.mark_lsn,
       s.in_recovery
  FROM snowflake_id_status s,
       LATERAL (
           SELECT count(*) AS standbys,
                  count(*) FILTER (WHERE r.flush_lsn >= coalesce(s.mark_lsn, '0/0')) AS standbys_with_mark,
                  count(*) FILTER (WHERE r.flush_lsn >= coalesce(s.mark_lsn, '0/0')
                                     AND r.sync_state IN ('sync', 'quorum')) AS sync_standbys_with_mark,
                  -- WAL bytes the closest standby lacks (0: it has the mark;
                  -- NULL: no standby, or none whose position is known).
                  min(CASE WHEN r.flush_lsn >= coalesce(s.mark_lsn, '0/0') THEN 0
                           ELSE pg_wal_lsn_diff(s.mark_lsn, r.flush_lsn) END) AS bytes_behind
             FROM pg_stat_replication r
            WHERE r.state IN ('streaming', 'catchup') AND r.replay_lsn IS NOT NULL
              AND r.pid NOT IN (SELECT active_pid FROM pg_replication_slots
                                 WHERE slot_type = 'logical' AND active_pid IS NOT NULL)
       ) x;
