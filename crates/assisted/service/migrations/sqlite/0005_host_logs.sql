-- The logs each host's agent uploads (logs-gather: a gzip-compressed tar),
-- one archive per host and logs type, replaced by a newer upload
-- (assisted-service keeps them in its object store under
-- <cluster_id>/logs/). hosts.logs_collected_at: Unix ms of the host's last
-- upload, 0 for none; a host in error or cancelled gets logs-gather while
-- it is older than its status.
CREATE TABLE host_logs (
    cluster_id TEXT NOT NULL,
    infra_env_id TEXT NOT NULL,
    host_id TEXT NOT NULL,
    logs_type TEXT NOT NULL,
    content BLOB NOT NULL,
    uploaded_at BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, infra_env_id, host_id, logs_type)
);
ALTER TABLE hosts ADD COLUMN logs_collected_at BIGINT NOT NULL DEFAULT 0;
