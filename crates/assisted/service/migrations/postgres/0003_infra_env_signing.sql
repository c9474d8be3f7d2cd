-- The generation of an infra-env's agent-token key: agent tokens name the
-- generation they were issued at; regenerate-signing-key moves it on, which
-- revokes every token issued before.
ALTER TABLE infra_envs ADD COLUMN signing_generation BIGINT NOT NULL DEFAULT 0;
