"""The Python client SDK (`clients/python`, import `zhiyi_client`) against one real `zhiyi up` for the
module: the sync and async clients end to end, errors, idempotent retries after a lost answer (a proxy
that swallows answers), the push listener and its exactly-once resume across cut connections and a
server restart, every endpoint of the OpenAPI document having a method (and answering through it),
and the client README's Python quickstart run verbatim."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from eventually import eventually, eventually_sync
from tcp_proxy import TcpProxy
from up_process import ROOT, base_env, free_port, start_up, stop
from zhiyi_client import (
    AsyncZhiyi, BadRequest, Conflict, ConnectionFailed, Forbidden, IdempotencyKeyReused, Kind, NotFound, PushMessage,
    RetryPolicy, Unauthorized, VersionConflict, Zhiyi, position_key,
)
from zhiyi_client.calls import Call

pytestmark = pytest.mark.slow  # starts a real `zhiyi up`

CLIENT_README = ROOT / "clients" / "python" / "README.md"


class Server:
    def __init__(self, cwd: Path, port: int) -> None:
        self.cwd = cwd
        self.url = f"http://127.0.0.1:{port}"
        self.port = port
        self.proc = start_up(cwd / "data", port, cwd, base_env())
        self.admin_key = (cwd / "data" / "api_key").read_text().strip()

    def restart(self) -> None:
        stop(self.proc)
        self.proc = start_up(self.cwd / "data", self.port, self.cwd, base_env())

    def admin(self, **kwargs) -> Zhiyi:
        return Zhiyi(self.url, self.admin_key, **kwargs)

    def agent(self, agent_id: str, **kwargs) -> Zhiyi:
        """A sync client for a newly registered agent (sharing the admin's read-your-writes mark)."""
        admin = self.admin(**kwargs)
        return admin.with_key(admin.register_agent(agent_id, agent_type="hermes").api_key)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("sdk"), free_port())
    try:
        yield running
    finally:
        stop(running.proc)


class LosingProxy:
    """Forwards TCP connections to the server, but swallows the answer on the first `lose` of them:
    the server got the whole request and acted on it, the client sees its connection reset."""

    def __init__(self, port: int, lose: int = 1) -> None:
        self.target = port
        self.lose = lose
        self.accepted = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            upstream = socket.create_connection(("127.0.0.1", self.target))
            losing = self.accepted <= self.lose
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, losing), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, losing: bool) -> None:
        try:
            while data := src.recv(65536):
                if losing:      # the answer arrived: drop it and reset the client's connection
                    dst.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):     # shutdown() also wakes the other direction's thread blocked in recv()
            for end in (lambda: s.shutdown(socket.SHUT_RDWR), s.close):
                try:
                    end()
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


# ---------------------------------------------------------------------------------------- sync client

def test_sync_client_end_to_end(server):
    zy = server.agent("sdk-sync")
    assert zy.health().ok
    first = zy.commit("The staging database listens on port 55432", category="fact", tags=["db", "ports"],
                      derived_from="chat-sdk-1")
    assert first.version == 1 and not first.duplicate and zy.position == first.position
    # read-your-writes: no after= by hand, the client sends its last write's position
    hits = zy.recall("which port does the staging database use", top_k=3)
    assert hits.results[0].memory_id == first.memory_id and hits.results[0].tags == ("db", "ports")
    assert [h.memory_id for h in zy.recall("staging database port", method="GET")][0] == first.memory_id

    batch = zy.batch_commit([{"content": "The build server is called anvil", "namespace": "shared"},
                             {"content": "Deploys happen on Tuesdays", "category": "decision"}])
    assert len(batch.memory_ids) == 2 and batch.position == batch.results[-1].position
    assert zy.position == batch.position

    vote = zy.feedback_useful(first.memory_id, reason="it was right")
    assert vote.verdict == "useful" and vote.memory_id == first.memory_id
    assert zy.feedback_not_useful(batch.memory_ids[1]).verdict == "not_useful"

    fixed = zy.correct(first.memory_id, "The staging database listens on port 55433", "moved",
                       expected_version=1)
    assert fixed.version == 2
    history = zy.versions(first.memory_id)
    assert history.version == 2 and history.content.endswith("55433") and history.useful_count == 1
    assert [v.version for v in history.versions] == [1, 2] and history.versions[1].reason == "moved"
    assert history.derived_from == "chat-sdk-1"

    gone = zy.delete_memory(batch.memory_ids[1], expected_version=1, reason="obsolete")
    assert zy.versions(batch.memory_ids[1]).is_deleted and gone.version == 2
    stats = zy.stats()
    assert stats.by_namespace["sdk-sync-main"] == 1 and stats.queues is None   # an agent key sees no queues
    assert server.admin().stats(after=zy.position).queues is not None

    episode = zy.commit_episode([{"role": "user", "content": "My NAS is a Synology DS920+"},
                                 {"role": "assistant", "content": "Noted."}], episode_id="chat-sdk-ep")
    assert zy.episode("chat-sdk-ep").episode_id == episode.episode_id == "chat-sdk-ep"


def test_errors_map_to_the_exception_hierarchy(server):
    zy = server.agent("sdk-errors")
    with pytest.raises(NotFound) as missing:
        zy.versions("00000000-0000-0000-0000-000000000000")
    assert missing.value.status == 404 and missing.value.code == "not_found"
    with pytest.raises(Forbidden) as other:
        zy.commit("not mine", namespace="sdk-sync-main")
    assert other.value.status == 403
    with pytest.raises(Forbidden) as admin_only:
        zy.triggers()
    assert admin_only.value.code == "admin_required"
    with pytest.raises(BadRequest) as bad:
        zy.recall("anything", top_k=0)
    assert bad.value.code == "invalid_request" and bad.value.details["field"] == "top_k"
    with pytest.raises(Unauthorized):
        Zhiyi(server.url, "zk_not_a_key").stats()
    memory = zy.commit("a memory to delete twice")
    zy.delete_memory(memory.memory_id)
    with pytest.raises(VersionConflict) as stale:
        zy.delete_memory(memory.memory_id, expected_version=1)
    assert stale.value.current_version == 2
    zy.commit("first body", idempotency_key="sdk-errors-key")
    with pytest.raises(IdempotencyKeyReused):
        zy.commit("another body", idempotency_key="sdk-errors-key")


def test_listener_raises_refused_handshakes_and_bounds_reconnects(server):
    zy = server.agent("sdk-push-errors")
    with zy.listen("sdk-sync") as stream, pytest.raises(Forbidden):     # another agent's socket
        stream.next(timeout=10)
    with server.admin().listen("sdk-nobody") as stream, pytest.raises(NotFound):
        stream.next(timeout=10)
    nowhere = Zhiyi(f"http://127.0.0.1:{free_port()}", zy.config.api_key)
    with nowhere.listen("sdk-push-errors", max_reconnects=1) as stream, pytest.raises(ConnectionFailed):
        stream.next(timeout=10)


# ------------------------------------------------------------------------------------------- retries

def test_same_idempotency_key_twice_is_one_memory(server):
    zy = server.agent("sdk-idem")
    call = Call("POST", "/api/v1/commit", dict, Kind.KEYED_WRITE, body={"content": "written once"},
                idempotency_key="sdk-idem-1")
    first, again = zy._execute(call), zy._execute(call)
    assert first["memory_id"] == again["memory_id"] and again["duplicate"] is True
    assert zy.stats().by_namespace["sdk-idem-main"] == 1


def test_sync_write_retried_after_a_lost_answer_lands_once(server):
    agent = server.agent("sdk-lost-sync")
    proxy = LosingProxy(server.port, lose=1)
    try:
        lossy = Zhiyi(proxy.url, agent.config.api_key, retry_policy=agent.config.policy)
        result = lossy.commit("the answer to this commit is lost once")
    finally:
        proxy.close()
    assert proxy.accepted == 2 and result.duplicate is True      # the retry answered the original
    assert agent.stats(after=result.position).by_namespace["sdk-lost-sync-main"] == 1


async def test_async_write_retried_after_a_lost_answer_lands_once(server):
    key = server.agent("sdk-lost-async").config.api_key
    proxy = LosingProxy(server.port, lose=1)
    try:
        async with AsyncZhiyi(proxy.url, key) as lossy:
            result = await lossy.batch_commit([{"content": "lost answer, batch entry one"},
                                               {"content": "lost answer, batch entry two"}])
    finally:
        proxy.close()
    assert proxy.accepted == 2 and result.duplicate is True
    async with AsyncZhiyi(server.url, key) as zy:
        assert (await zy.stats(after=result.position)).by_namespace["sdk-lost-async-main"] == 2


def test_write_without_an_idempotency_record_is_not_retried_after_a_lost_answer(server):
    proxy = LosingProxy(server.port, lose=1)
    try:
        with pytest.raises(ConnectionFailed) as lost:
            Zhiyi(proxy.url, server.admin_key).tick(dry_run=True)
    finally:
        proxy.close()
    assert lost.value.sent is True and proxy.accepted == 1


# -------------------------------------------------------------------------------------- async client

async def test_async_client_end_to_end(server):
    async with AsyncZhiyi(server.url, server.admin_key) as admin:
        reg = await admin.register_agent("sdk-async", agent_type="openclaw", namespace="sdk-async-home")
        assert reg.namespaces[0] == "sdk-async-home" and reg.ws_endpoint == "/api/v1/ws/sdk-async"
        zy = admin.with_key(reg.api_key)
        done = await zy.commit("The coffee machine is on the third floor", tags=["office"])
        assert done.namespace == "sdk-async-home"
        hits = await zy.recall("where is the coffee machine", trace_id="sdk-trace-1")
        assert hits.results[0].memory_id == done.memory_id and len(hits) >= 1
        fixed = await zy.correct(done.memory_id, "The coffee machine is on the fourth floor", "moved")
        assert (await zy.versions(done.memory_id)).content.endswith("fourth floor") and fixed.version == 2
        deprecated = await zy.deprecate(done.memory_id, "no coffee any more")
        assert deprecated.version == 3
        # a client from with_key() shares the mark: the admin's reads wait for the agent's writes too
        assert admin.position == zy.position == deprecated.position
        assert position_key((await admin.stats()).last_position) >= position_key(deprecated.position)
        boot = await zy.bootstrap(limit=5)
        assert boot.position
        with pytest.raises(NotFound):
            await zy.episode("no-such-episode")


# -------------------------------------------------------------------------------------------- push

def test_sync_listener_receives_memory_updated_after_a_correction(server):
    zy = server.agent("sdk-push-sync")
    memory = zy.commit("The printer's IP address is 10.0.0.7")
    with zy.listen("sdk-push-sync", include_connected=True) as stream:
        assert stream.next(timeout=15).type == "connected"
        zy.correct(memory.memory_id, "The printer's IP address is 10.0.0.8", "renumbered")
        message = stream.next(timeout=15)
    assert isinstance(message, PushMessage) and message.type == "memory.updated"
    assert message.data["memory_id"] == memory.memory_id and message.data["new_version"] == 2
    assert stream.last_position == message.position


async def test_listener_resumes_after_cut_connections_exactly_once_in_order(server):
    corrections = 12
    sync_agent = server.agent("sdk-push-resume")
    key = sync_agent.config.api_key
    memory = sync_agent.commit("Counter memory, version 1")
    proxy = TcpProxy("127.0.0.1", server.port).start()
    received: list[PushMessage] = []
    try:
        async with AsyncZhiyi(server.url, key) as zy:
            listener = AsyncZhiyi(f"http://{proxy.url_host_port}", key)
            stream = listener.listen("sdk-push-resume", include_connected=True)

            async def collect() -> None:
                async for message in stream:
                    received.append(message)
                    if sum(m.type == "memory.updated" for m in received) == corrections:
                        return

            collector = asyncio.create_task(collect())

            def connections(n: int) -> Callable[[], bool]:
                return lambda: sum(m.type == "connected" for m in received) >= n

            async def correct(steps: range) -> None:
                for i in steps:
                    await zy.correct(memory.memory_id, f"Counter memory, version {i + 2}", f"step {i}")

            await eventually(connections(1), timeout_s=10, what="the socket's connected message")
            await correct(range(0, 4))
            proxy.cut()                                     # reset the socket; reconnects are refused
            await correct(range(4, 7))
            proxy.heal()
            await eventually(connections(2), timeout_s=15, what="a reconnect after the cut was healed")
            await correct(range(7, 9))
            proxy.cut()
            await correct(range(9, corrections))
            proxy.heal()
            await asyncio.wait_for(collector, 30)
            await stream.aclose()
            await listener.close()
    finally:
        proxy.stop()
    pushed = [m for m in received if m.type != "connected"]
    updates = [m for m in pushed if m.type == "memory.updated"]
    assert [m.data["new_version"] for m in updates] == list(range(2, corrections + 2))
    keys = [tuple(int(p) for p in m.position.split("-")) for m in pushed]
    assert keys == sorted(set(keys))                  # every message once, in log order
    assert stream.reconnects >= 2 and sum(m.type == "connected" for m in received) >= 3


def test_sync_listener_resumes_across_a_server_restart(server):
    """Restarts the module's server (its data dir, and so its log and agents, stay)."""
    zy = server.agent("sdk-push-restart")
    memory = zy.commit("Restart counter, version 1")
    listener = Zhiyi(server.url, zy.config.api_key, retry_policy=RetryPolicy(max_delay=0.5))
    with listener.listen("sdk-push-restart", include_connected=True) as stream:
        assert stream.next(timeout=15).type == "connected"
        for version in (2, 3):
            zy.correct(memory.memory_id, f"Restart counter, version {version}", "before the restart")
        assert [stream.next(timeout=15).data["new_version"] for _ in range(2)] == [2, 3]
        server.restart()                      # the socket is closed; reconnects are refused meanwhile
        for version in (4, 5, 6):
            zy.correct(memory.memory_id, f"Restart counter, version {version}", "after the restart")
        rest = [stream.next(timeout=30) for _ in range(4)]
    assert [m.type for m in rest] == ["connected", "memory.updated", "memory.updated", "memory.updated"]
    assert [m.data["new_version"] for m in rest[1:]] == [4, 5, 6] and stream.reconnects >= 1


# --------------------------------------------------------------------------------- every endpoint

#: (method, route) of the OpenAPI document -> the client method serving it
ROUTES = {
    ("GET", "/health"): "health", ("GET", "/api/v1/openapi.json"): "openapi",
    ("POST", "/api/v1/agents/register"): "register_agent",
    ("POST", "/api/v1/agents/{agent_id}/rotate-key"): "rotate_key",
    ("POST", "/api/v1/agents/{agent_id}/revoke"): "revoke_key",
    ("POST", "/api/v1/sessions/{session_id}/close"): "close_session", ("GET", "/api/v1/admin/audit"): "audit",
    ("POST", "/api/v1/commit"): "commit", ("POST", "/api/v1/batch-commit"): "batch_commit",
    ("POST", "/api/v1/recall"): "recall", ("GET", "/api/v1/recall"): "recall",
    ("GET", "/api/v1/bootstrap"): "bootstrap",
    ("DELETE", "/api/v1/distilled/{memory_id}"): "delete_memory", ("GET", "/api/v1/stats"): "stats",
    ("POST", "/api/v1/admin/synonyms"): "add_synonyms", ("GET", "/api/v1/admin/synonyms"): "synonyms",
    ("POST", "/api/v1/eval/run"): "eval_run", ("POST", "/api/v1/eval/generate"): "eval_generate",
    ("GET", "/api/v1/eval/history"): "eval_history", ("POST", "/api/v1/admin/tick"): "tick",
    ("GET", "/api/v1/admin/tombstones"): "tombstones", ("POST", "/api/v1/admin/forget"): "forget",
    ("POST", "/api/v1/feedback/useful"): "feedback_useful",
    ("POST", "/api/v1/feedback/not-useful"): "feedback_not_useful",
    ("POST", "/api/v1/feedback/deprecate"): "deprecate", ("POST", "/api/v1/feedback/correct"): "correct",
    ("GET", "/api/v1/memory/{memory_id}/versions"): "versions", ("POST", "/api/v1/episodes"): "commit_episode",
    ("POST", "/api/v1/episodes/batch"): "commit_episodes", ("GET", "/api/v1/episodes/{episode_id}"): "episode",
    ("GET", "/api/v1/graph/stats"): "graph_stats", ("POST", "/api/v1/graph/navigate"): "graph_navigate",
    ("POST", "/api/v1/graph/query"): "graph_query", ("GET", "/api/v1/conflicts"): "conflicts",
    ("POST", "/api/v1/conflicts/resolve"): "resolve_conflict", ("POST", "/api/v1/admin/unmerge"): "unmerge",
    ("GET", "/api/v1/triggers"): "triggers", ("POST", "/api/v1/admin/triggers/run"): "run_triggers",
    ("POST", "/api/v1/admin/triggers/{name}/pause"): "pause_trigger",
    ("POST", "/api/v1/admin/triggers/{name}/resume"): "resume_trigger",
    ("GET", "/api/v1/consolidation"): "consolidation", ("POST", "/api/v1/admin/consolidate"): "consolidate",
    ("POST", "/api/v1/admin/consolidation/steps/{step}/enable"): "enable_consolidation_step",
    ("GET", "/api/v1/instances"): "instances", ("GET", "/metrics"): "prometheus_metrics",
    ("GET", "/api/v1/metrics/self"): "metrics_self", ("POST", "/api/v1/admin/replicas"): "create_replica",
    ("POST", "/api/v1/replicas/{instance_id}/ops"): "replica_ops", ("POST", "/api/v1/admin/backup"): "backup",
    ("GET", "/api/v1/admin/backups"): "backups", ("GET", "/api/v1/ws/{agent_id}"): "listen",
    ("POST", "/api/v1/trace/vprop"): "vprop", ("GET", "/api/v1/skills"): "skills",
    ("POST", "/api/v1/skills/{name}/trial"): "skill_trial", ("GET", "/api/v1/gaps"): "gaps",
    ("GET", "/api/v1/l3/worldmodel"): "worldmodel",
}
#: routes of the contract the server may not serve yet
PENDING: set[tuple[str, str]] = set()


def test_every_endpoint_of_the_openapi_document_has_a_method_on_both_clients(server):
    doc = server.admin().openapi()
    served = {(m.upper(), path) for path, ops in doc["paths"].items() for m in ops
              if m in ("get", "post", "put", "patch", "delete")}
    assert served - set(ROUTES) == set(), "endpoints without a client method"
    assert set(ROUTES) - served <= PENDING, "client methods for routes the server does not have"
    for name in set(ROUTES.values()):
        assert callable(getattr(Zhiyi(server.url), name)) and callable(getattr(AsyncZhiyi(server.url), name))


def test_the_other_endpoints_answer_through_the_client(server):
    """One call of each remaining endpoint: the requests the client builds are the ones the server takes."""
    admin = server.admin()
    zy = admin.with_key(admin.register_agent("sdk-misc").api_key)
    a = zy.commit("Grafana runs on port 3000 on the monitoring host", derived_from="sdk-misc-chat")
    b = zy.commit("The monitoring host is named watchtower", depends_on=[a.memory_id])
    assert zy.recall("grafana port", method="GET", include_namespaces=["sdk-sync-main"], cache=False,
                     min_score=0.0).results
    assert zy.close_session("sdk-misc-session")["count"] == 0
    assert len(zy.commit_episodes([{"kind": "task", "turns": [{"role": "user", "content": "Rotate the logs"}]}])
               ["results"]) == 1
    assert zy.graph_stats()["nodes"] >= 2
    assert zy.graph_query("MATCH (a:fact) RETURN count(*)")["columns"]
    with pytest.raises(NotFound):
        zy.graph_navigate(a.memory_id, "no-such-node")
    assert "conflicts" in zy.conflicts(status="all")
    with pytest.raises(NotFound):
        zy.resolve_conflict("no-such-conflict", "latest_wins")
    with pytest.raises(Conflict):                                # the memory is not merged
        admin.unmerge(b.memory_id)
    assert admin.triggers()["triggers"] and "fired" in admin.run_triggers()
    assert admin.pause_trigger("gap", reason="sdk test")["paused"] and not admin.resume_trigger("gap")["paused"]
    assert "changed" in admin.enable_consolidation_step("clusters")
    assert "now" in admin.tick(dry_run=True) and admin.forget(dry_run=True)["dry_run"] is True
    assert "runs" in admin.consolidation(limit=1) and admin.instances()["instances"]
    assert admin.metrics_self(days=3)["metrics"] and "zhiyi_uptime_seconds" in admin.prometheus_metrics()
    assert admin.audit(type=["memory.*"], agent_id="sdk-misc", limit=5)["events"]
    assert "archives" in admin.backups() and "tombstones" in admin.tombstones(limit=5)
    assert admin.add_synonyms("sdkterm", ["sdksynonym"]).position and admin.synonyms()["total"] >= 1
    golden = admin.eval_generate(n=3, seed=7)
    assert "recall_at_5" in admin.eval_run(golden_set_id=golden["golden_set_id"])
    assert admin.eval_history(limit=2)["runs"]
    replica = admin.create_replica()
    ops = Zhiyi(server.url, replica["replica_key"]).replica_ops(replica["instance_id"], [])
    assert ops["results"] == []
    assert admin.backup()["backup_id"]
    rotated = zy.rotate_key("sdk-misc")
    assert Zhiyi(server.url, rotated.api_key).revoke_key("sdk-misc")["revoked"] is True
    with pytest.raises(Unauthorized):
        Zhiyi(server.url, rotated.api_key).stats()


def test_vprop_rewards_the_memories_a_traced_recall_returned(server):
    zy = server.agent("sdk-learning")
    memory = zy.commit("Use the blue button to restart the router")
    assert zy.recall("how to restart the router", trace_id="sdk-trace:1").results
    rewarded = zy.vprop("sdk-trace:1", 1.0)
    assert rewarded.trace_id == "sdk-trace:1" and rewarded.reward == 1.0 and rewarded.position
    assert memory.memory_id in {m.memory_id for m in rewarded.memories}
    assert all(isinstance(m.v_value, float) for m in rewarded.memories)
    skills = zy.skills(status="active")
    assert all(s.status == "active" for s in skills)
    with pytest.raises(NotFound):
        zy.skill_trial("no-such-skill", True)


def test_gaps_answer_typed(server):
    zy = server.agent("sdk-gaps")
    zy.commit("The office wifi password is taped under the router")
    for _ in range(3):                      # three misses on one topic open a gap
        zy.recall("what is the name of the CEO's dog", min_score=0.9, cache=False)
    gaps = eventually_sync(lambda: zy.gaps(status="all", limit=10) or None, timeout_s=15, what="a knowledge gap")
    assert gaps.count == len(gaps) and gaps.position and gaps.gaps[0].query
    assert all(g.gap_id and g.status in ("open", "closed") and g.agent_id == "sdk-gaps" for g in gaps)
    assert gaps.closure_rate is None or 0.0 <= gaps.closure_rate <= 1.0


def test_worldmodel_answers_typed(server):
    agent = server.agent("sdk-world")
    rule = agent.commit("Never deploy on Fridays", category="constraint", namespace="shared")

    def updated():
        world = agent.worldmodel()
        return world if any(c.memory_id == rule.memory_id for c in world.constraints) else None

    world = eventually_sync(updated, timeout_s=20, what="the constraint in the world model")
    assert all(isinstance(c.hard, bool) and c.text for c in world.constraints) and world.position
    assert next(c for c in world.constraints if c.memory_id == rule.memory_id).hard is True


# -------------------------------------------------------------------------------------- quickstart

def python_quickstart(readme: Path) -> str | None:
    block = re.search(r"<!-- python-quickstart:begin -->\s*```python\n(.*?)```\s*<!-- python-quickstart:end -->",
                      readme.read_text(), re.S)
    return block.group(1) if block else None


def test_the_python_quickstart_runs_verbatim(server):
    """The main README's Python quickstart, which clients/python/README.md carries too (identical)."""
    script = python_quickstart(ROOT / "README.md")
    assert script, "Python quickstart block not found in README.md"
    assert python_quickstart(CLIENT_README) == script, "the two READMEs' Python quickstarts differ"
    env = {**os.environ, "ZHIYI": server.url}
    run = subprocess.run([sys.executable, "-c", script], cwd=server.cwd, env=env,
                         capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[0] == "ok" and "memory.updated" in run.stdout
