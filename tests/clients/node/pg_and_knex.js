// node-postgres and Knex against a real server, as docs/applications.md
// tells their users. Run by tests/clients.rs with NODE_PATH set to the
// modules scripts/test.sh installs (npm ci of this directory's lock file):
// node pg_and_knex.js SOCKET_DIR PORT. Exits non-zero on any mismatch.
'use strict';

const assert = require('node:assert/strict');
const pg = require('pg');
const knexFactory = require('knex');

const [host, port] = process.argv.slice(2);
const connection = { host, port: Number(port), user: 'postgres', database: 'postgres' };

// Exact: the decimal text PostgreSQL itself writes for an ID.
async function serverText(client, id) {
  const { rows } = await client.query('SELECT $1::bigint::text AS t', [id]);
  return rows[0].t;
}

async function nodePostgres() {
  const client = new pg.Client(connection);
  await client.connect();
  await client.query(`CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), body text)`);

  // bigint arrives as a string by default: keep it that way.
  const { rows } = await client.query(
    `INSERT INTO events (body) SELECT 'e' || g FROM generate_series(1, 1000) g RETURNING id`);
  const ids = rows.map((r) => r.id);
  assert.ok(ids.every((id) => typeof id === 'string'));
  assert.equal(new Set(ids).size, 1000);
  for (const id of ids.slice(0, 20)) assert.equal(await serverText(client, id), id);
  // As JavaScript numbers most would be rounded (float64 has 53 bits).
  const rounded = ids.filter((id) => String(Number(id)) !== id).length;
  assert.ok(rounded > 900, `${rounded} of 1000 IDs rounded as numbers`);
  // Sorting strings sorts IDs only at equal length; BigInt compares exactly.
  const sorted = [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
  assert.deepEqual(sorted, ids);

  // A block, as an array of strings, one round trip.
  const block = (await client.query('SELECT snowflake_nextval_array($1) AS ids', [100])).rows[0].ids;
  assert.equal(block.length, 100);
  assert.ok(block.every((id) => typeof id === 'string'));
  assert.ok(BigInt(block[0]) > BigInt(ids[ids.length - 1]));

  // Opting in to BigInt for int8 (OID 20) on one query: exact too.
  const types = { getTypeParser: (oid, format) => (oid === 20 ? BigInt : pg.types.getTypeParser(oid, format)) };
  const big = (await client.query({ text: 'SELECT id FROM snowflake_nextval_block(5) id', types })).rows.map((r) => r.id);
  assert.ok(big.every((id) => typeof id === 'bigint'));
  assert.equal(await serverText(client, big[4].toString()), big[4].toString());
  // And back as a parameter: a BigInt is sent as its exact decimal text.
  const found = await client.query('SELECT count(*)::int AS n FROM events WHERE id = $1', [ids[999]]);
  assert.equal(found.rows[0].n, 1);
  await client.end();
}

async function knex() {
  const db = knexFactory({ client: 'pg', connection });
  try {
    await db.schema.raw(`CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL)`);
    await db.schema.raw(`CREATE TABLE order_lines (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
                           order_id bigint NOT NULL REFERENCES orders, item text NOT NULL)`);

    // Insert without the key, one statement, keys back in order as strings.
    const rows = Array.from({ length: 500 }, (_, i) => ({ item: `order ${i}` }));
    const inserted = await db('orders').insert(rows).returning(['id', 'item']);
    assert.equal(inserted.length, 500);
    inserted.forEach((r, i) => {
      assert.equal(typeof r.id, 'string');
      assert.equal(r.item, `order ${i}`);
    });

    // A parent and its children keyed from one block, inserted in one
    // transaction, one statement per table.
    const [{ ids }] = await db.select(db.raw('snowflake_nextval_array(?) AS ids', [1 + 20]));
    const [parentId, ...lineIds] = ids;
    await db.transaction(async (trx) => {
      await trx('orders').insert({ id: parentId, item: 'parent' });
      await trx('order_lines').insert(lineIds.map((id, n) => ({ id, order_id: parentId, item: `line ${n}` })));
    });
    const stored = await db('order_lines').where({ order_id: parentId }).orderBy('id').pluck('id');
    assert.deepEqual(stored, lineIds);
    assert.ok(BigInt(parentId) > BigInt(inserted[499].id));
  } finally {
    await db.destroy();
  }
}

(async () => {
  await nodePostgres();
  await knex();
  console.log('node-postgres and knex: ok');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
