#!/bin/sh
# Benchmark of the AWS UPI stacks (issue #23): generation of the templates
# and parameter files, and `okd-install aws deploy` to all stacks complete
# against moto's server, each beside a PyYAML/boto3 peer (release build;
# not a test; about a minute). Needs python3 with moto 5.2.1 and cfn-lint
# (.ci/run's virtual environment at /var/tmp/okd-py).
# Usage: bench/aws-stacks.sh
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=/var/tmp/okd-bench-target}"
export CARGO_TARGET_DIR
exec cargo bench -p okd-install --bench aws_stacks
