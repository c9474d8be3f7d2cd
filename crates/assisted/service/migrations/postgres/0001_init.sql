-- The assisted service's tables (after assisted-service's clusters,
-- infra_envs, hosts and events; JSON documents as text, times as Unix
-- milliseconds, absent ids as ''). Kept the same for SQLite and
-- PostgreSQL except for the events' sequence.

CREATE TABLE clusters (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    status_info TEXT NOT NULL,
    status_updated_at BIGINT NOT NULL,
    params TEXT NOT NULL,
    pull_secret TEXT NOT NULL,
    validations_info TEXT NOT NULL DEFAULT '',
    install_started_at BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE infra_envs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    cluster_id TEXT NOT NULL DEFAULT '',
    params TEXT NOT NULL,
    pull_secret TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX infra_envs_cluster_id ON infra_envs (cluster_id);

CREATE TABLE hosts (
    id TEXT NOT NULL,
    infra_env_id TEXT NOT NULL,
    cluster_id TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    status_info TEXT NOT NULL,
    status_updated_at BIGINT NOT NULL,
    role TEXT NOT NULL DEFAULT 'auto-assign',
    suggested_role TEXT NOT NULL DEFAULT '',
    bootstrap BIGINT NOT NULL DEFAULT 0,
    requested_hostname TEXT NOT NULL DEFAULT '',
    installation_disk_id TEXT NOT NULL DEFAULT '',
    inventory TEXT NOT NULL DEFAULT '',
    validations_info TEXT NOT NULL DEFAULT '',
    ntp_sources TEXT NOT NULL DEFAULT '',
    connectivity TEXT NOT NULL DEFAULT '',
    domain_name_resolutions TEXT NOT NULL DEFAULT '',
    free_addresses TEXT NOT NULL DEFAULT '',
    progress_stage TEXT NOT NULL DEFAULT '',
    progress_info TEXT NOT NULL DEFAULT '',
    steps TEXT NOT NULL DEFAULT '[]',
    checked_in_at BIGINT NOT NULL DEFAULT 0,
    host_timestamp BIGINT NOT NULL DEFAULT 0,
    agent_version TEXT NOT NULL DEFAULT '',
    registered_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (id, infra_env_id)
);
CREATE INDEX hosts_cluster_id ON hosts (cluster_id);

CREATE TABLE events (
    seq BIGSERIAL PRIMARY KEY,
    cluster_id TEXT NOT NULL DEFAULT '',
    host_id TEXT NOT NULL DEFAULT '',
    infra_env_id TEXT NOT NULL DEFAULT '',
    severity TEXT NOT NULL,
    category TEXT NOT NULL,
    name TEXT NOT NULL,
    message TEXT NOT NULL,
    event_time BIGINT NOT NULL
);
CREATE INDEX events_cluster_id ON events (cluster_id);
CREATE INDEX events_host_id ON events (host_id);
CREATE INDEX events_infra_env_id ON events (infra_env_id);
