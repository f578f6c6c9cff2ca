"""Backups of the log (and copies of the projections) into archives, and restores from them: used by
`zhiyi backup` / `zhiyi restore` (gateway.cli.backup) and `POST /api/v1/admin/backup`."""
