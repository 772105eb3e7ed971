//! Checks shared by the single- and multi-partition handlers: the acks a produce may ask
//! for, and the bytes a fetch may return within the connection's budget.

use crate::admission::budget::{Budget, FetchPlan, Reservation};
use crate::broker_error::BrokerError;
use crate::protocol::{ErrorCode, ACKS_ALL, ACKS_LEADER, ACKS_NONE};
use crate::shard::runtime::Shard;

/// Space a Fetch response needs besides its records.
const FETCH_RESPONSE_OVERHEAD: usize = 64;

pub(super) fn check_acks(acks: i16) -> Result<(), BrokerError> {
    if [ACKS_NONE, ACKS_LEADER, ACKS_ALL].contains(&acks) {
        return Ok(());
    }
    Err(BrokerError::new(
        ErrorCode::InvalidAcks,
        format!("acks must be 0, 1 or -1 (all), got {acks}"),
    ))
}

/// The bytes a Fetch may return ([`FetchPlan`]'s rule, with a native reply's fields), the
/// reply's reservation merged into `reservation`.
pub(super) async fn fetch_bytes(
    shard: &Shard,
    max_bytes: i32,
    budget: &Budget,
    reservation: &mut Reservation,
) -> Result<usize, BrokerError> {
    if max_bytes <= 0 {
        return Err(BrokerError::new(
            ErrorCode::InvalidRequest,
            format!("max_bytes must be positive, got {max_bytes}"),
        ));
    }
    let plan = FetchPlan::new(
        max_bytes as usize,
        FETCH_RESPONSE_OVERHEAD,
        shard.config().max_frame_bytes,
    );
    let (reply, granted) = plan.grant(budget).await.ok_or(BrokerError::new(
        ErrorCode::ShuttingDown,
        "connection closing".to_string(),
    ))?;
    reservation.merge(reply);
    Ok(granted)
}
