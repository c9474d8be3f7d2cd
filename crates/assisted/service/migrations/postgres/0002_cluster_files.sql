-- The files an install generates (install-config.yaml, the Ignition
-- configs, metadata.json, the credentials, each host's pointer config),
-- kept in the database so that every replica of the service hands out
-- the same ones (assisted-service keeps them in its object store under
-- <cluster_id>/).
CREATE TABLE cluster_files (
    cluster_id TEXT NOT NULL,
    name TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, name)
);
