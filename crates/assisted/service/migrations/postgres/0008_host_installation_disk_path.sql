-- The installation disk's device path (`/dev/sda`) beside its id
-- (`installation_disk_id`, the by-id path when the disk has one): both
-- are chosen when the host's inventory arrives (issue #42 item 8), as
-- assisted-service's host `installation_disk_path` and
-- `installation_disk_id` are.
ALTER TABLE hosts ADD COLUMN installation_disk_path TEXT NOT NULL DEFAULT '';
