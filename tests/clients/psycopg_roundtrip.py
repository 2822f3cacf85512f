"""A real application client: psycopg 3 inserts with RETURNING id, decodes,
and round-trips IDs exactly. Run by tests/clients.rs against its own server:
python psycopg_roundtrip.py SOCKET_DIR PORT. Exits non-zero on any mismatch."""

import sys

import psycopg

from expect import expect


def main(host: str, port: str) -> None:
    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text)")

        # INSERT ... RETURNING gives the key the column default made, as a Python int.
        ids = []
        for item in ("tea", "cake", "scones"):
            cur.execute("INSERT INTO orders (item) VALUES (%s) RETURNING id", (item,))
            (new_id,) = cur.fetchone()
            expect(type(new_id) is int, type(new_id))
            ids.append(new_id)
        expect(ids == sorted(ids) and len(set(ids)) == 3, ids)

        # executemany with RETURNING, as ORMs batch inserts.
        cur.executemany("INSERT INTO orders (item) VALUES (%s) RETURNING id", [("x",), ("y",)], returning=True)
        batch = []
        while True:
            batch.append(cur.fetchone()[0])
            if not cur.nextset():
                break
        expect(batch[0] > ids[-1] and batch[1] > batch[0], batch)

        # Decoding a Python int parameter, and the exact round trip of every ID.
        for i in ids + batch:
            cur.execute("SELECT (snowflake_decode(%s)).worker_id, snowflake_timestamp(%s), id::text FROM orders WHERE id = %s",
                        (i, i, i))
            worker, ts, text = cur.fetchone()
            expect(worker == 7, worker)
            expect(ts.tzinfo is not None, ts)
            expect(text == str(i), (text, i))
            expect(int(text) == i)

        # Default-layout IDs pass 2^53: a JavaScript number (a float64) would
        # round them, so send them to browsers as strings.
        big = max(ids)
        expect(big > 2**53, big)
        expect(float(big) == float(big + 1), "float64 should not tell neighbouring default-layout IDs apart")
        cur.execute("SELECT id::text FROM orders WHERE id = %s", (big,))
        expect(cur.fetchone()[0] == str(big))
    print("psycopg round trip: ok", len(ids) + len(batch), "IDs")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
