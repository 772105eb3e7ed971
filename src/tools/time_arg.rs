//! Time arguments as Kafka's tools take them: epoch milliseconds, or ISO-8601
//! `yyyy-MM-ddTHH:mm:ss[.SSS]` with an optional zone `Z`, `+08`, `+0800` or `+08:00`
//! (no zone means UTC, with a note on stderr when the host's zone is not UTC), plus the
//! special names for ListOffsets targets.

use chrono::{FixedOffset, NaiveDateTime, TimeZone};

use crate::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};

/// Parses epoch milliseconds or an ISO-8601 date-time into epoch milliseconds.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map_err(|_| format!("{s:?} is too large for milliseconds"));
    }
    let (datetime, offset_secs) = split_zone(s)?;
    let naive = NaiveDateTime::parse_from_str(datetime, "%Y-%m-%dT%H:%M:%S%.f").map_err(|_| {
        format!(
            "{s:?} is not a time: use epoch milliseconds or yyyy-MM-ddTHH:mm:ss[.SSS] with an \
             optional zone Z, +08, +0800 or +08:00 (no zone means UTC)"
        )
    })?;
    let zone = FixedOffset::east_opt(offset_secs)
        .ok_or_else(|| format!("{s:?}: zone offset out of range"))?;
    let dt = zone
        .from_local_datetime(&naive)
        .single()
        .ok_or_else(|| format!("{s:?} is not a valid local time"))?;
    Ok(dt.timestamp_millis())
}

/// Splits a trailing zone (`Z`, `+08`, `+0800`, `+08:00`, or `-` forms) from a date-time.
fn split_zone(s: &str) -> Result<(&str, i32), String> {
    if let Some(rest) = s.strip_suffix('Z') {
        return Ok((rest, 0));
    }
    let Some(t) = s.find('T') else {
        return Err(format!("{s:?} lacks the 'T' between date and time"));
    };
    let Some(sign_at) = s[t..].rfind(['+', '-']).map(|i| i + t) else {
        return Ok((s, 0));
    };
    let sign = if &s[sign_at..sign_at + 1] == "-" {
        -1
    } else {
        1
    };
    let zone: String = s[sign_at + 1..].chars().filter(|&c| c != ':').collect();
    let bad = || format!("{s:?}: zone must be Z, +HH, +HHMM or +HH:MM");
    if !zone.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let (h, m) = match zone.len() {
        2 => (zone.parse::<i32>().map_err(|_| bad())?, 0),
        4 => (
            zone[..2].parse::<i32>().map_err(|_| bad())?,
            zone[2..].parse::<i32>().map_err(|_| bad())?,
        ),
        _ => return Err(bad()),
    };
    if h > 18 || m > 59 {
        return Err(bad());
    }
    assert!(sign_at > t, "the zone follows the time");
    Ok((&s[..sign_at], sign * (h * 3600 + m * 60)))
}

/// A ListOffsets target: a time as above, or earliest/-2, latest/-1, max-timestamp/-3.
pub fn parse_offset_target(s: &str) -> Result<i64, String> {
    match s.trim() {
        "earliest" | "-2" => Ok(EARLIEST_TIMESTAMP),
        "latest" | "-1" => Ok(LATEST_TIMESTAMP),
        "max-timestamp" | "-3" => Ok(MAX_TIMESTAMP),
        other => parse_time_flag("--time", other),
    }
}

/// Parses a zone for printing times: `UTC`, `Z`, `+08`, `+0800`, `+08:00` or `-` forms.
pub fn parse_zone(s: &str) -> Result<FixedOffset, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("utc") || s == "Z" {
        return Ok(FixedOffset::east_opt(0).expect("zero offset"));
    }
    if s.eq_ignore_ascii_case("local") {
        return Ok(host_offset());
    }
    if !s.starts_with(['+', '-']) {
        return Err(format!(
            "--time-zone {s:?}: use UTC, local, Z, +HH, +HHMM or +HH:MM (or - forms)"
        ));
    }
    // The same zone forms a time argument may end with.
    let (_, secs) = split_zone(&format!("2000-01-01T00:00:00{s}"))?;
    FixedOffset::east_opt(secs).ok_or_else(|| format!("zone {s:?} is out of range"))
}

/// Epoch milliseconds as ISO-8601 with milliseconds and the zone's offset.
pub fn format_time(ms: i64, zone: FixedOffset) -> String {
    match zone.timestamp_millis_opt(ms).single() {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(),
        None => ms.to_string(),
    }
}

/// 2000-01-01T00:00:00Z in milliseconds, and 2100 in seconds.
const YEAR_2000_MS: i64 = 946_684_800_000;
const YEAR_2100_SECS: i64 = 4_102_444_800;
const DAY_MS: i64 = 86_400_000;

/// Why a time argument is probably not what the user meant: seconds given as
/// milliseconds, a date before 2000, or more than a day in the future.
pub fn suspicious(ts: i64, now_ms: i64) -> Option<String> {
    if (YEAR_2000_MS / 1000..YEAR_2100_SECS).contains(&ts) {
        return Some(format!(
            "looks like seconds, not milliseconds (as milliseconds: {ts}000)"
        ));
    }
    if ts < YEAR_2000_MS {
        return Some("is before the year 2000 (a typo in the year?)".into());
    }
    if ts > now_ms.saturating_add(DAY_MS) {
        return Some(
            "is more than a day in the future (a wrong zone, or a typo in the date?)".into(),
        );
    }
    None
}

/// This host's current offset from UTC (TZ, else /etc/localtime).
fn host_offset() -> FixedOffset {
    use chrono::Offset;
    chrono::Local::now().offset().fix()
}

/// Whether an ISO-8601 time argument names its zone (epoch milliseconds need none).
fn names_zone(raw: &str) -> bool {
    let raw = raw.trim();
    raw.bytes().all(|b| b.is_ascii_digit())
        || raw.ends_with('Z')
        || raw.find('T').is_some_and(|t| raw[t..].contains(['+', '-']))
}

/// Parses a time flag and warns on stderr when the value looks wrong (the tools are for
/// people, who mistype seconds for milliseconds), or when a time without a zone is read as
/// UTC on a host whose zone is not UTC (Kafka's tools would read it in the local zone).
pub fn parse_time_flag(flag: &str, raw: &str) -> Result<i64, String> {
    let ts = parse_time(raw)?;
    let local = host_offset();
    if !names_zone(raw) && local.local_minus_utc() != 0 {
        eprintln!(
            "note: {flag} {raw} has no zone and is read as UTC; this host's zone is {local} \
             (Kafka's tools would read it there): add Z or {local} to say which"
        );
    }
    if let Some(why) = suspicious(ts, crate::time::now_ms()) {
        eprintln!("warning: {flag} {raw} ({ts} ms since the epoch, UTC) {why}");
    }
    Ok(ts)
}

/// The `--from-time` / `--to-time` pair of a tool, parsed (with warnings) and checked.
pub fn parse_window(
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(Option<i64>, Option<i64>), String> {
    let from_ms = from
        .map(|t| parse_time_flag("--from-time", t))
        .transpose()?;
    let to_ms = to.map(|t| parse_time_flag("--to-time", t)).transpose()?;
    if let (Some(f), Some(t)) = (from_ms, to_ms) {
        if t <= f {
            return Err(format!(
                "--to-time {} must be after --from-time {}",
                to.unwrap_or_default(),
                from.unwrap_or_default()
            ));
        }
    }
    assert!(
        from_ms.zip(to_ms).is_none_or(|(f, t)| f < t),
        "a window ends after it starts"
    );
    Ok((from_ms, to_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_in_the_zone_asked() {
        let utc = 1_709_992_800_000; // 2024-03-09T14:00:00Z
        assert_eq!(
            format_time(utc, parse_zone("+08:00").unwrap()),
            "2024-03-09T22:00:00.000+08:00"
        );
        assert_eq!(
            format_time(utc, parse_zone("UTC").unwrap()),
            "2024-03-09T14:00:00.000+00:00"
        );
        assert!(parse_zone("Mars").is_err());
    }

    #[test]
    fn seconds_old_dates_and_far_futures_are_flagged() {
        let now = 1_764_460_800_000; // 2025-11-30
        assert!(suspicious(1_709_992_800, now).unwrap().contains("seconds"));
        assert!(suspicious(86_400_000, now).unwrap().contains("2000"));
        assert!(suspicious(now + 2 * DAY_MS, now)
            .unwrap()
            .contains("future"));
        assert_eq!(suspicious(now - 3_600_000, now), None);
    }

    #[test]
    fn iso_times_with_every_zone_form() {
        let utc = 1_709_992_800_000; // 2024-03-09T14:00:00Z
        assert_eq!(parse_time("2024-03-09T14:00:00.000").unwrap(), utc);
        assert_eq!(parse_time("2024-03-09T14:00:00").unwrap(), utc);
        assert_eq!(parse_time("2024-03-09T14:00:00.000Z").unwrap(), utc);
        for z in ["+08", "+0800", "+08:00"] {
            assert_eq!(
                parse_time(&format!("2024-03-09T22:00:00.000{z}")).unwrap(),
                utc,
                "{z}"
            );
        }
        assert_eq!(parse_time("2024-03-09T09:30:00.000-04:30").unwrap(), utc);
        assert_eq!(parse_time("2024-03-09T14:00:00.250").unwrap(), utc + 250);
        assert_eq!(parse_time("1709992800000").unwrap(), utc);
    }

    #[test]
    fn bad_times_are_clear_errors() {
        for bad in [
            "",
            "yesterday",
            "2024-03-09",
            "2024-13-09T14:00:00",
            "2024-03-09T14:00:00+8",
            "2024-03-09T14:00:00+0a00",
            "2024-03-09T14:00:00+25",
        ] {
            assert!(parse_time(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn special_targets() {
        assert_eq!(parse_offset_target("earliest").unwrap(), -2);
        assert_eq!(parse_offset_target("-1").unwrap(), -1);
        assert_eq!(parse_offset_target("max-timestamp").unwrap(), -3);
        assert_eq!(parse_offset_target("5").unwrap(), 5);
    }
}
