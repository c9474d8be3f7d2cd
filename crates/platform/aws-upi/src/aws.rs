//! The AWS clients of `okd-install aws deploy|destroy` (the official AWS
//! SDK for Rust: CloudFormation, S3, EC2, ELBv2, Route53), made from the
//! standard configuration chain (environment, `~/.aws/config` and
//! credentials, SSO, the instance's role; `AWS_ENDPOINT_URL` is honoured,
//! which the tests use for moto's server), and the one shape every AWS
//! failure is reported in: the service and call, what it was about, AWS's
//! error code and message.

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_credential_types::provider::ProvideCredentials;
use aws_sdk_cloudformation::error::{DisplayErrorContext, ProvideErrorMetadata};

/// How many times a call is tried when AWS answers "slow down"
/// (Throttling, RequestLimitExceeded) or a transient error: the SDK's
/// standard retry mode with exponential backoff and jitter.
pub const MAX_ATTEMPTS: u32 = 8;

/// A failed AWS call: `CloudFormation CreateStack (stack okd45-x-vpc):
/// ValidationError: …`.
#[derive(Debug, thiserror::Error)]
#[error("{call} ({about}): {detail}")]
pub struct AwsError {
    /// Service and operation, e.g. `CloudFormation CreateStack`.
    pub call: &'static str,
    /// What it was about: a stack, a bucket, a zone, an AMI.
    pub about: String,
    /// AWS's error code, when the answer had one (`Throttling`,
    /// `ValidationError`, `InvalidAMIID.NotFound`, …).
    pub code: Option<String>,
    /// `code: message`, or the SDK's full error chain (no answer: the
    /// endpoint unreachable, no credentials, a timeout).
    pub detail: String,
}

impl AwsError {
    /// From an SDK error of any service.
    pub fn of<E, R>(
        call: &'static str,
        about: impl Into<String>,
        e: &aws_sdk_cloudformation::error::SdkError<E, R>,
    ) -> AwsError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let code = e.code().map(String::from);
        let detail = match (e.code(), e.message()) {
            (Some(c), Some(m)) => format!("{c}: {m}"),
            (Some(c), None) => c.to_string(),
            _ => DisplayErrorContext(e).to_string(),
        };
        let detail = if matches!(
            code.as_deref(),
            Some(
                "Throttling"
                    | "ThrottlingException"
                    | "RequestLimitExceeded"
                    | "TooManyRequestsException"
            )
        ) {
            format!(
                "{detail} (still throttled after {MAX_ATTEMPTS} attempts with backoff; try again later)"
            )
        } else {
            detail
        };
        AwsError {
            call,
            about: about.into(),
            code,
            detail,
        }
    }

    /// Whether AWS said the thing asked about does not exist.
    pub fn not_found(&self) -> bool {
        self.code.as_deref().is_some_and(|c| {
            c.contains("NotFound")
                || c == "NoSuchBucket"
                || c == "NoSuchKey"
                || c == "NoSuchHostedZone"
        }) || (self.code.as_deref() == Some("ValidationError")
            && self.detail.contains("does not exist"))
    }
}

/// The clients of one region.
#[derive(Debug, Clone)]
pub struct Clients {
    /// The region.
    pub region: String,
    /// CloudFormation.
    pub cfn: aws_sdk_cloudformation::Client,
    /// S3 (path-style addressing when an endpoint URL is set, as moto's
    /// server and other S3-compatible endpoints need).
    pub s3: aws_sdk_s3::Client,
    /// EC2.
    pub ec2: aws_sdk_ec2::Client,
    /// Elastic Load Balancing v2.
    pub elb: aws_sdk_elasticloadbalancingv2::Client,
    /// Route53.
    pub route53: aws_sdk_route53::Client,
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The configuration chain found no credentials.
    #[error(
        "no AWS credentials: {0} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE for a profile of ~/.aws/config, or run where an instance role applies)"
    )]
    NoCredentials(String),
}

impl Clients {
    /// Loads the configuration for `region` and checks that credentials
    /// can be had (before any call, so "no credentials" is said once and
    /// plainly).
    ///
    /// # Errors
    /// [`ConnectError::NoCredentials`] with the chain's reason.
    pub async fn connect(region: &str) -> Result<Clients, ConnectError> {
        let conf = aws_config::defaults(BehaviorVersion::latest())
            .region(aws_config::Region::new(region.to_string()))
            .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
            .load()
            .await;
        let Some(provider) = conf.credentials_provider() else {
            return Err(ConnectError::NoCredentials(
                "no credentials provider is configured".into(),
            ));
        };
        if let Err(e) = provider.provide_credentials().await {
            // The first line: the chain's verdict (the lines after it list
            // every provider tried).
            // Each cause's Display (DisplayErrorContext would add the Debug
            // form of the whole chain).
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            let first = text
                .lines()
                .next()
                .unwrap_or_default()
                .trim_end_matches(". Attempted:");
            return Err(ConnectError::NoCredentials(first.to_string()));
        }
        let s3_conf = aws_sdk_s3::config::Builder::from(&conf)
            .force_path_style(conf.endpoint_url().is_some())
            .build();
        Ok(Clients {
            region: region.to_string(),
            cfn: aws_sdk_cloudformation::Client::new(&conf),
            s3: aws_sdk_s3::Client::from_conf(s3_conf),
            ec2: aws_sdk_ec2::Client::new(&conf),
            elb: aws_sdk_elasticloadbalancingv2::Client::new(&conf),
            route53: aws_sdk_route53::Client::new(&conf),
        })
    }
}
