//! Parsing of sizes (`512MiB`, `4GB`, `1048576`) and durations (`30s`, `2m`, `500ms`) with
//! clear errors, for clap.

/// Splits `"12.5MiB"` into the number and the unit.
fn number_and_unit(s: &str) -> (&str, &str) {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    (num, unit.trim())
}

/// Bytes from a number with an optional unit: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB
/// (KB = 1000, KiB = 1024; a bare K/M/G is binary, as dd and fio read it).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = number_and_unit(s);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size: use e.g. 1048576, 512KiB, 64MB, 4GiB"))?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1e3,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "gb" => 1e9,
        "t" | "tib" => 1024f64.powi(4),
        "tb" => 1e12,
        other => {
            return Err(format!(
                "{s:?}: unknown size unit {other:?} (use B, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    let bytes = value * mult;
    if !(1.0..=1e15).contains(&bytes) {
        return Err(format!("{s:?} is out of range (1 byte .. 1 PB)"));
    }
    Ok(bytes as u64)
}

/// Seconds from a number with an optional unit: ms, s (default), m, h.
pub fn parse_duration_secs(s: &str) -> Result<f64, String> {
    let (num, unit) = number_and_unit(s);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: use e.g. 30, 30s, 500ms, 2m"))?;
    let secs = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "{s:?}: unknown duration unit {other:?} (use ms, s, m, h)"
            ))
        }
    };
    if !(0.001..=7.0 * 86400.0).contains(&secs) {
        return Err(format!("{s:?} is out of range (1 ms .. 7 days)"));
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("4G").unwrap(), 4 << 30);
        assert_eq!(parse_size("64MB").unwrap(), 64_000_000);
        assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
        for bad in ["", "abc", "12XB", "-5", "0", "MiB"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_secs("30").unwrap(), 30.0);
        assert_eq!(parse_duration_secs("500ms").unwrap(), 0.5);
        assert_eq!(parse_duration_secs("2m").unwrap(), 120.0);
        for bad in ["", "x", "5 days", "0", "-1s"] {
            assert!(parse_duration_secs(bad).is_err(), "{bad:?}");
        }
    }
}
