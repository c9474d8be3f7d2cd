//! When the bootstrap's etcd member may go (issue #21 item 2): the rule of
//! cluster-etcd-operator's bootstrap teardown controller
//! (openshift/cluster-etcd-operator
//! `pkg/operator/bootstrapteardown/bootstrap_teardown_controller.go`: more
//! members than the bootstrap plus two, every member healthy), restated for
//! any number of masters: the bootstrap member is removed only when every
//! expected master is a voting member, no member is still a learner, and
//! every voter but the bootstrap is healthy, so the voters left keep
//! quorum without it; with one master that master must be a healthy voter,
//! so the cluster is never left without one.

/// The bootstrap's member name (`etcd-bootstrap`, the name the
/// `etcd-bootstrap` stage gives it).
pub const BOOTSTRAP_MEMBER: &str = okd_bootstrap_render::etcd::MEMBER;

/// One etcd member as the member list and a health probe show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member's name (`etcd-bootstrap`, or a master's node name).
    pub name: String,
    /// Still a learner (added with `--learner`, not promoted yet).
    pub learner: bool,
    /// Its client endpoint answered a status request.
    pub healthy: bool,
}

/// Why the bootstrap member stays, in words for the log and the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// It is gone already.
    AlreadyRemoved,
    /// Fewer masters vote than the install has (`have` of `want`).
    MastersMissing {
        /// Voting masters.
        have: usize,
        /// The install's control-plane replicas.
        want: usize,
    },
    /// A member is still a learner.
    LearnerPending(String),
    /// A voter other than the bootstrap does not answer.
    Unhealthy(String),
}

impl std::fmt::Display for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keep::AlreadyRemoved => write!(f, "the bootstrap etcd member is already removed"),
            Keep::MastersMissing { have, want } => write!(
                f,
                "{have} of {want} masters are voting etcd members; the bootstrap member keeps quorum until all are"
            ),
            Keep::LearnerPending(m) => write!(
                f,
                "etcd member {m} is still a learner (catching up); the bootstrap member stays until it is promoted"
            ),
            Keep::Unhealthy(m) => write!(
                f,
                "etcd member {m} does not answer; removing the bootstrap member now could lose quorum"
            ),
        }
    }
}

/// Whether the bootstrap member may be removed from `members` for an
/// install of `masters` control-plane replicas: `Ok(())`, or why not.
pub fn can_remove_bootstrap(members: &[Member], masters: usize) -> Result<(), Keep> {
    if !members.iter().any(|m| m.name == BOOTSTRAP_MEMBER) {
        return Err(Keep::AlreadyRemoved);
    }
    let others: Vec<&Member> = members
        .iter()
        .filter(|m| m.name != BOOTSTRAP_MEMBER)
        .collect();
    if let Some(l) = others.iter().find(|m| m.learner) {
        return Err(Keep::LearnerPending(l.name.clone()));
    }
    let want = masters.max(1);
    if others.len() < want {
        return Err(Keep::MastersMissing {
            have: others.len(),
            want,
        });
    }
    if let Some(u) = others.iter().find(|m| !m.healthy) {
        return Err(Keep::Unhealthy(u.name.clone()));
    }
    // Every voter left is healthy: a majority of them, hence quorum.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, learner: bool, healthy: bool) -> Member {
        Member {
            name: name.into(),
            learner,
            healthy,
        }
    }

    #[test]
    fn three_masters_all_voting_and_healthy_let_the_bootstrap_go() {
        let mut ms = vec![
            m(BOOTSTRAP_MEMBER, false, true),
            m("master-0", false, true),
            m("master-1", false, true),
            m("master-2", false, true),
        ];
        assert_eq!(can_remove_bootstrap(&ms, 3), Ok(()));
        ms[2].healthy = false;
        assert_eq!(
            can_remove_bootstrap(&ms, 3),
            Err(Keep::Unhealthy("master-1".into()))
        );
        ms[2].healthy = true;
        ms[3].learner = true;
        assert_eq!(
            can_remove_bootstrap(&ms, 3),
            Err(Keep::LearnerPending("master-2".into()))
        );
        ms.pop();
        assert_eq!(
            can_remove_bootstrap(&ms, 3),
            Err(Keep::MastersMissing { have: 2, want: 3 })
        );
    }

    #[test]
    fn one_master_must_be_a_healthy_voter_and_a_removed_bootstrap_stays_removed() {
        let ms = vec![m(BOOTSTRAP_MEMBER, false, true)];
        assert_eq!(
            can_remove_bootstrap(&ms, 1),
            Err(Keep::MastersMissing { have: 0, want: 1 })
        );
        let ms = vec![m(BOOTSTRAP_MEMBER, false, true), m("master", true, true)];
        assert!(matches!(
            can_remove_bootstrap(&ms, 1),
            Err(Keep::LearnerPending(_))
        ));
        let ms = vec![m(BOOTSTRAP_MEMBER, false, true), m("master", false, true)];
        assert_eq!(can_remove_bootstrap(&ms, 1), Ok(()));
        assert_eq!(
            can_remove_bootstrap(&[m("master", false, true)], 1),
            Err(Keep::AlreadyRemoved)
        );
        let e = Keep::MastersMissing { have: 1, want: 3 }.to_string();
        assert!(e.contains("1 of 3"), "{e}");
    }
}
