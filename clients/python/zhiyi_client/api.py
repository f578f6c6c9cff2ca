"""Every endpoint of the HTTP API, once, as methods of both clients (see `binding`). The push socket
is the clients' `listen()`."""

from __future__ import annotations

from .binding import endpoint
from .endpoints import admin, episodes, evaluation, feedback, graph, learning, memories, system


class Endpoints:
    # agents, keys, system
    register_agent = endpoint(system.register_agent)
    rotate_key = endpoint(system.rotate_key)
    revoke_key = endpoint(system.revoke_key)
    health = endpoint(system.health)
    openapi = endpoint(system.openapi)
    stats = endpoint(system.stats)
    instances = endpoint(system.instances)
    metrics_self = endpoint(system.metrics_self)
    prometheus_metrics = endpoint(system.prometheus_metrics)

    # memories
    commit = endpoint(memories.commit)
    batch_commit = endpoint(memories.batch_commit)
    recall = endpoint(memories.recall)
    bootstrap = endpoint(memories.bootstrap)
    delete_memory = endpoint(memories.delete_memory)
    versions = endpoint(memories.versions)
    close_session = endpoint(memories.close_session)

    # feedback
    feedback_useful = endpoint(feedback.feedback_useful)
    feedback_not_useful = endpoint(feedback.feedback_not_useful)
    deprecate = endpoint(feedback.deprecate)
    correct = endpoint(feedback.correct)

    # episodes
    commit_episode = endpoint(episodes.commit_episode)
    commit_episodes = endpoint(episodes.commit_episodes)
    episode = endpoint(episodes.episode)

    # knowledge graph and conflicts
    graph_stats = endpoint(graph.graph_stats)
    graph_navigate = endpoint(graph.graph_navigate)
    graph_query = endpoint(graph.graph_query)
    conflicts = endpoint(graph.conflicts)
    resolve_conflict = endpoint(graph.resolve_conflict)
    unmerge = endpoint(graph.unmerge)

    # self-improvement
    vprop = endpoint(learning.vprop)
    skills = endpoint(learning.skills)
    skill_trial = endpoint(learning.skill_trial)
    gaps = endpoint(learning.gaps)
    worldmodel = endpoint(learning.worldmodel)

    # evaluation
    eval_generate = endpoint(evaluation.eval_generate)
    eval_run = endpoint(evaluation.eval_run)
    eval_history = endpoint(evaluation.eval_history)

    # admin
    forget = endpoint(admin.forget)
    tick = endpoint(admin.tick)
    triggers = endpoint(admin.triggers)
    run_triggers = endpoint(admin.run_triggers)
    pause_trigger = endpoint(admin.pause_trigger)
    resume_trigger = endpoint(admin.resume_trigger)
    consolidate = endpoint(admin.consolidate)
    consolidation = endpoint(admin.consolidation)
    enable_consolidation_step = endpoint(admin.enable_consolidation_step)
    audit = endpoint(admin.audit)
    backup = endpoint(admin.backup)
    backups = endpoint(admin.backups)
    tombstones = endpoint(admin.tombstones)
    add_synonyms = endpoint(admin.add_synonyms)
    synonyms = endpoint(admin.synonyms)
    create_replica = endpoint(admin.create_replica)
    replica_ops = endpoint(admin.replica_ops)
