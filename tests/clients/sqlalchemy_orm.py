"""SQLAlchemy 2 ORM against a real server, as docs/applications.md tells its
users. Run by tests/clients.rs: python sqlalchemy_orm.py SOCKET_DIR PORT.
Exits non-zero on any mismatch.

1. The key mapped as Identity(), the table's DEFAULT snowflake_nextval()
   (created in SQL, as a migration would): one INSERT for 1,000 objects,
   every object gets its own key back.
2. The key mapped with server_default: right, but one INSERT per object.
3. A parent and its children keyed from one block, inserted in one flush
   with one statement per table and nothing read back."""

import sys

from sqlalchemy import BigInteger, ForeignKey, Identity, create_engine, event, func, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from expect import expect

DDL = """
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL);
CREATE TABLE order_lines (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
                          order_id bigint NOT NULL REFERENCES orders, item text NOT NULL);
CREATE TABLE notes (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), body text NOT NULL);
"""


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    # Identity() only tells SQLAlchemy that the database makes the key and
    # makes it in insert order, so that it batches the INSERT and matches
    # the keys RETURNING gives back to the objects by sorting them. The
    # column's real default is snowflake_nextval(), set by the DDL.
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    item: Mapped[str]


class OrderLine(Base):
    __tablename__ = "order_lines"
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    order_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("orders.id"))
    item: Mapped[str]


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, server_default=text("snowflake_nextval()"))
    body: Mapped[str]


def main(host: str, port: str) -> None:
    engine = create_engine(f"postgresql+psycopg://postgres@/postgres?host={host}&port={port}")
    with engine.begin() as conn:
        conn.exec_driver_sql(DDL)
    statements = []

    @event.listens_for(engine, "before_cursor_execute")
    def count(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    # 1. Batched: one INSERT ... RETURNING for 1,000 objects.
    with Session(engine) as session:
        orders = [Order(item=f"order {i}") for i in range(1000)]
        session.add_all(orders)
        statements.clear()
        session.flush()
        inserts = [s for s in statements if s.startswith("INSERT")]
        expect(len(inserts) == 1, f"{len(inserts)} INSERTs for 1,000 orders")
        session.commit()
        stored = dict(session.execute(text("SELECT item, id FROM orders")).all())
        expect(all(stored[o.item] == o.id for o in orders), "an object holds another row's key")
        keys = [o.id for o in orders]
        expect(all(type(k) is int for k in keys) and keys == sorted(keys) and len(set(keys)) == 1000)

    # 2. server_default: the same keys, one statement per object.
    with Session(engine) as session:
        notes = [Note(body=f"note {i}") for i in range(100)]
        session.add_all(notes)
        statements.clear()
        session.flush()
        session.commit()
        stored = dict(session.execute(text("SELECT body, id FROM notes")).all())
        expect(all(stored[n.body] == n.id for n in notes))
        inserts = [s for s in statements if s.startswith("INSERT")]
        print("sqlalchemy server_default: 100 notes in", len(inserts), "INSERTs")

    # 3. A parent and its children keyed from one block: the children need
    # the parent's key before anything is inserted.
    with Session(engine) as session:
        ids = session.scalar(select(func.snowflake_nextval_array(1 + 50)))
        expect(len(ids) == 51 and ids == sorted(ids) and ids[0] > keys[-1], ids)
        parent = Order(id=ids[0], item="parent")
        lines = [OrderLine(id=i, order_id=parent.id, item=f"line {n}") for n, i in enumerate(ids[1:])]
        session.add(parent)
        session.add_all(lines)
        statements.clear()
        session.commit()
        inserts = [s for s in statements if s.startswith("INSERT")]
        expect(len(inserts) == 2 and not any("RETURNING" in s for s in inserts), inserts)
        got = session.execute(
            text("SELECT l.id FROM order_lines l JOIN orders o ON o.id = l.order_id WHERE o.id = :p ORDER BY l.id"),
            {"p": ids[0]},
        ).scalars().all()
        expect(got == ids[1:], got)
    print("sqlalchemy: ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
