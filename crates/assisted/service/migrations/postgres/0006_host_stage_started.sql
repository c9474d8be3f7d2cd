-- When the host's current installation stage began, Unix ms (0: no stage
-- reported yet): the monitor's per-stage timeouts count from it
-- (assisted-service's host progress stage_started_at).
ALTER TABLE hosts ADD COLUMN progress_stage_started_at BIGINT NOT NULL DEFAULT 0;
