//! DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554: what
//! `kafka-configs --entity-type users` and AdminClient use to manage SCRAM users live. The
//! client salts the password; the server derives and stores the keys (`security/`).
//! Altering is taken from loopback only unless `allow.remote.admin` (until ACLs exist).

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, RequestKind,
    ResponseKind,
};

use super::errors::{self, kafka_code};
use super::refusal::Refusal;
use super::{str_bytes, Context};
use crate::security::acl::Operation;
use crate::security::changes::SecurityChange;
use crate::security::credentials::{self, check, Changes, CredentialStore};
use crate::security::scram::{Credential, Mechanism};

use super::errors::UNSUPPORTED_SASL_MECHANISM;
const RESOURCE_NOT_FOUND: i16 = 91;
const DUPLICATE_RESOURCE: i16 = 92;
const UNACCEPTABLE_CREDENTIAL: i16 = 93;

/// The user and SASL APIs once a connection is being served.
pub async fn dispatch(ctx: &Context<'_>, request: RequestKind) -> ResponseKind {
    match request {
        RequestKind::DescribeUserScramCredentials(r) => {
            ResponseKind::DescribeUserScramCredentials(describe(ctx, r))
        }
        RequestKind::AlterUserScramCredentials(r) => {
            ResponseKind::AlterUserScramCredentials(alter(ctx, r).await)
        }
        // SASL is over (or was never asked for, on a PLAINTEXT listener).
        r => super::sasl::out_of_turn(r),
    }
}

pub fn describe(
    ctx: &Context<'_>,
    r: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if !ctx.on_cluster(Operation::Describe) {
        let why = super::authorize::denied(crate::security::acl::ResourceType::Cluster, "");
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
            .with_error_message(Some(str_bytes(why)));
    }
    let store = credentials::snapshot();
    let mut by_user: BTreeMap<String, Vec<CredentialInfo>> = BTreeMap::new();
    for (user, m, iterations) in store.list() {
        by_user.entry(user).or_default().push(
            CredentialInfo::default()
                .with_mechanism(m.kafka_type())
                .with_iterations(iterations as i32),
        );
    }
    let asked: Vec<String> = match r.users {
        None => by_user.keys().cloned().collect(),
        Some(users) => users.into_iter().map(|u| u.name.to_string()).collect(),
    };
    let mut seen = BTreeSet::new();
    let duplicated: BTreeSet<&String> = asked.iter().filter(|u| !seen.insert(*u)).collect();
    let mut reported = BTreeSet::new();
    let results = asked
        .iter()
        .filter(|u| reported.insert(*u))
        .map(|user| {
            let result = DescribeUserScramCredentialsResult::default().with_user(str_bytes(user));
            match (duplicated.contains(user), by_user.get(user)) {
                (true, _) => result
                    .with_error_code(DUPLICATE_RESOURCE)
                    .with_error_message(Some(str_bytes(format!("user {user} asked twice")))),
                (false, None) => result
                    .with_error_code(RESOURCE_NOT_FOUND)
                    .with_error_message(Some(str_bytes(format!(
                        "attempt to describe a user credential that does not exist: {user}"
                    )))),
                (false, Some(infos)) => result.with_credential_infos(infos.clone()),
            }
        })
        .collect::<Vec<_>>();
    // Each user asked for once, however often it was named.
    assert_eq!(results.len(), seen.len(), "one result per user");
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

/// One user's part of an alteration, validated: its changes, or its error.
type Checked = Result<Changes, Refusal>;

fn check_user(
    store: &CredentialStore,
    user: &str,
    deletions: &[i8],
    upsertions: &[(i8, i32, &[u8], &[u8])],
) -> Checked {
    let mut changes = Changes::default();
    for &t in deletions {
        let m = Mechanism::from_kafka_type(t).ok_or_else(|| {
            Refusal::new(UNSUPPORTED_SASL_MECHANISM, format!("unknown mechanism {t}"))
        })?;
        if store.get(user, m).is_none() {
            let why = format!("user {user} has no {} credential", m.name());
            return Err(Refusal::new(RESOURCE_NOT_FOUND, why));
        }
        changes.deletions.push((user.to_string(), m));
    }
    for &(t, iterations, salt, salted) in upsertions {
        let m = Mechanism::from_kafka_type(t).ok_or_else(|| {
            Refusal::new(UNSUPPORTED_SASL_MECHANISM, format!("unknown mechanism {t}"))
        })?;
        let iterations = u32::try_from(iterations).unwrap_or(0);
        check(user, iterations)
            .map_err(|e| Refusal::new(UNACCEPTABLE_CREDENTIAL, e.to_string()))?;
        if salt.is_empty() || salted.is_empty() {
            let why = "a salt and a salted password are required".to_string();
            return Err(Refusal::new(UNACCEPTABLE_CREDENTIAL, why));
        }
        let credential = Credential::from_salted(m, salted, salt.to_vec(), iterations);
        changes.upsertions.push((user.to_string(), m, credential));
    }
    Ok(changes)
}

/// Each user named once per request (Kafka refuses a user named twice with 92).
fn users_named_twice(r: &AlterUserScramCredentialsRequest) -> BTreeSet<String> {
    let mut named: BTreeMap<(String, i8), usize> = BTreeMap::new();
    let deleted = r
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism));
    let upserted = r
        .upsertions
        .iter()
        .map(|u| (u.name.to_string(), u.mechanism));
    for key in deleted.chain(upserted) {
        *named.entry(key).or_default() += 1;
    }
    named
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|((u, _), _)| u)
        .collect()
}

/// Each named user's part of the request, checked (refused as a whole from a remote peer
/// unless `allow.remote.admin`).
fn check_all(ctx: &Context<'_>, r: &AlterUserScramCredentialsRequest) -> BTreeMap<String, Checked> {
    let users: BTreeSet<String> = r
        .deletions
        .iter()
        .map(|d| d.name.to_string())
        .chain(r.upsertions.iter().map(|u| u.name.to_string()))
        .collect();
    let allowed = ctx.admin_allowed(Operation::Alter);
    let twice = users_named_twice(r);
    let store = credentials::snapshot();
    let mut outcome = BTreeMap::new();
    for user in users {
        let deletions: Vec<i8> = r
            .deletions
            .iter()
            .filter(|d| d.name.as_str() == user)
            .map(|d| d.mechanism)
            .collect();
        let upsertions: Vec<(i8, i32, &[u8], &[u8])> = r
            .upsertions
            .iter()
            .filter(|u| u.name.as_str() == user)
            .map(|u| {
                (
                    u.mechanism,
                    u.iterations,
                    &u.salt[..],
                    &u.salted_password[..],
                )
            })
            .collect();
        let checked = match (allowed, twice.contains(&user)) {
            (false, _) => Err(Refusal::new(
                errors::CLUSTER_AUTHORIZATION_FAILED,
                "credentials are altered from loopback only (allow.remote.admin)".to_string(),
            )),
            (true, true) => Err(Refusal::new(
                DUPLICATE_RESOURCE,
                format!("user {user} named twice"),
            )),
            (true, false) => check_user(&store, &user, &deletions, &upsertions),
        };
        outcome.insert(user, checked);
    }
    outcome
}

pub async fn alter(
    ctx: &Context<'_>,
    r: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let outcome = check_all(ctx, &r);
    let mut all = Changes::default();
    for changes in outcome.values().flatten() {
        all.deletions.extend(changes.deletions.iter().cloned());
        all.upsertions.extend(changes.upsertions.iter().cloned());
    }
    let applied = match all.deletions.is_empty() && all.upsertions.is_empty() {
        true => Ok(()),
        false => ctx
            .shard
            .security_change(SecurityChange::Credentials(all))
            .await
            .map(|_| ()),
    };
    let results = outcome
        .into_iter()
        .map(|(user, checked)| {
            let error = match (checked, &applied) {
                (Err(e), _) => Some(e),
                (Ok(_), Err(e)) => Some(Refusal::new(
                    kafka_code(e.code(), true),
                    e.message().clone(),
                )),
                (Ok(_), Ok(())) => None,
            };
            let result = AlterUserScramCredentialsResult::default().with_user(str_bytes(user));
            match error {
                Some(Refusal { code, message: why }) => result
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(why))),
                None => result,
            }
        })
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}
