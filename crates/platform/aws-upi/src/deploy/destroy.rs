//! `okd-install aws destroy` and the bootstrap's removal: what the deploy
//! record holds deleted in reverse order, the record rewritten after each step.

use std::path::Path;

use tracing::info;

use super::bucket::delete_object;
use super::network::tag_subnet;
use super::stack::delete_stack;
use super::state::state_path;
use super::targets::deregister;
use super::{DeployError, STATE_FILE, State, Stopped, Target, WaitOptions};
use crate::aws::{AwsError, Clients};
use crate::generate::AWS_DIR;

/// `okd-install aws destroy`: everything [`State`] records, in reverse
/// order: the targets, the stacks (each waited for), the objects, the
/// bucket when deploy made it. Nothing else is touched. The record is
/// rewritten after each step, so an interrupted destroy carries on.
///
/// # Errors
/// [`Stopped`] with what still exists.
pub async fn destroy(dir: &Path, wait: WaitOptions) -> Result<(), Stopped> {
    let Some(mut state) = State::read(dir).map_err(|e| Stopped {
        error: e,
        made: vec![],
    })?
    else {
        info!(
            "No {} in {}: nothing was deployed from this directory",
            STATE_FILE,
            dir.join(AWS_DIR).display()
        );
        return Ok(());
    };
    let r = destroy_inner(dir, wait, &mut state).await;
    r.map_err(|error| Stopped {
        error,
        made: state.summary(),
    })
}

async fn destroy_inner(
    dir: &Path,
    wait: WaitOptions,
    state: &mut State,
) -> Result<(), DeployError> {
    let aws = Clients::connect(&state.region).await?;
    while let Some(t) = state.targets.last().cloned() {
        deregister(&aws, &t).await?;
        state.targets.pop();
        state.write(dir)?;
    }
    while let Some(rec) = state.stacks.last().cloned() {
        delete_stack(&aws, &rec, wait).await?;
        state.stacks.pop();
        state.write(dir)?;
    }
    while let Some(o) = state.objects.last().cloned() {
        delete_object(&aws, &state.bucket, &o).await?;
        state.objects.pop();
        state.write(dir)?;
    }
    while let Some(subnet) = state.tagged_subnets.last().cloned() {
        tag_subnet(&aws, &subnet, &state.infra_id, false).await?;
        state.tagged_subnets.pop();
        state.write(dir)?;
    }
    if state.bucket_created {
        aws.s3
            .delete_bucket()
            .bucket(&state.bucket)
            .send()
            .await
            .map_err(|e| AwsError::of("S3 DeleteBucket", format!("bucket {}", state.bucket), &e))?;
        info!("Deleted S3 bucket {}", state.bucket);
        state.bucket_created = false;
    }
    std::fs::remove_file(state_path(dir)).map_err(|e| DeployError::File {
        path: state_path(dir),
        rule: e.to_string(),
    })?;
    info!(
        "Everything `okd-install aws deploy` made for {} is deleted",
        state.infra_id
    );
    Ok(())
}

/// The bootstrap's removal on AWS (after bootstrap-complete, as the
/// procedure's "delete the bootstrap stack"): its targets deregistered, the
/// bootstrap stack deleted and waited for, bootstrap.ign deleted from S3.
///
/// # Errors
/// [`Stopped`] with what still exists; [`DeployError::Check`] when no
/// bootstrap stack is recorded.
pub async fn destroy_bootstrap(dir: &Path, wait: WaitOptions) -> Result<(), Stopped> {
    let mut state = State::read(dir)
        .map_err(|e| Stopped { error: e, made: vec![] })?
        .ok_or_else(|| Stopped {
            error: DeployError::File {
                path: state_path(dir),
                rule: "missing: nothing was deployed with `okd-install aws deploy` from this directory".into(),
            },
            made: vec![],
        })?;
    let r = async {
        let aws = Clients::connect(&state.region).await?;
        let boot: Vec<Target> = state
            .targets
            .iter()
            .filter(|t| t.node == "bootstrap")
            .cloned()
            .collect();
        for t in &boot {
            deregister(&aws, t).await?;
            state.targets.retain(|x| x != t);
            state.write(dir)?;
        }
        if let Some(rec) = state
            .stacks
            .iter()
            .find(|s| s.name.ends_with("-bootstrap"))
            .cloned()
        {
            delete_stack(&aws, &rec, wait).await?;
            state.stacks.retain(|s| s.name != rec.name);
            state.write(dir)?;
        } else {
            info!("No bootstrap stack recorded: already deleted");
        }
        let objects = state.objects.clone();
        for o in objects {
            delete_object(&aws, &state.bucket, &o).await?;
            state.objects.retain(|x| *x != o);
            state.write(dir)?;
        }
        Ok::<(), DeployError>(())
    }
    .await;
    r.map_err(|error| Stopped {
        error,
        made: state.summary(),
    })
}
