"""The WebSocket hub (seed 2.7): each gateway tails the log, routes events to push messages
(`projections.queries.push`) and delivers them to its connected agents, with resume by position
and a bounded queue per connection."""
