-- The verify-vips step's output (whether something answers for the API and
-- ingress VIPs) and the installation-disk-speed-check's (the fdatasync p99
-- of the installation disk), JSON text each, '' before the first.
ALTER TABLE hosts ADD COLUMN verified_vips TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN disk_speed TEXT NOT NULL DEFAULT '';
