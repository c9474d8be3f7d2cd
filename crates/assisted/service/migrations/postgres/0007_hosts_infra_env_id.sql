-- Hosts by infra-env: a registration counts the infra-env's hosts
-- against --max-hosts-per-infra-env (issue #41), and the hosts of an
-- infra-env are listed by it.
CREATE INDEX hosts_infra_env_id ON hosts (infra_env_id);
