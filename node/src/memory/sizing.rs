//! How big the budget is: the default share of the machine's (or container's)
//! memory, and sizes as the setting spells them.

/// Default budget when none is set: this share of the machine's (or the cgroup's) memory.
const DEFAULT_SHARE: f64 = 0.75;

/// The default budget: a share of the cgroup's memory limit when there is one
/// (a container), else of the machine's memory.
pub fn default_budget() -> u64 {
    (atrium_protocol::host::memory_limit_bytes() as f64 * DEFAULT_SHARE) as u64
}

/// Parses a size: bytes, or a number with `K`, `M`, `G` (powers of 1024; `KiB`,
/// `MiB`, `GiB` and `KB`, `MB`, `GB` are read the same). `0` or `auto` means the default.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("auto") {
        return Ok(0);
    }
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 2GiB, 512M, 1073741824)"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("{s:?} has an unknown unit (use K, M or G)")),
    };
    Ok((number * scale as f64) as u64)
}
