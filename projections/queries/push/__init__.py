"""Push messages (seed 2.7, WebSocket): which log events an agent is told about, and what it is told.

`router.PushRouter` turns events into per-recipient `PushMessage`s; the gateway's hub
(`gateway.push`) tails the log, routes each batch and delivers the messages over the sockets.
Every message is derived from one event and carries its position, so a client that reconnects
with `after=<position>` is sent exactly what it missed by routing the same events again.
"""
