//! `--plot DIR`: SVG plots next to the JSON (plotters). Latency percentile curves in
//! HdrHistogram's percentile-distribution style (x: 1/(1-q) on a log axis, so the tail from
//! p50 to p99.999 gets equal room; y: latency, log scale), and write throughput over time.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use plotters::prelude::*;

const SIZE: (u32, u32) = (960, 540);
const COLORS: [RGBColor; 6] = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];

fn err(e: impl std::fmt::Display) -> String {
    format!("plotting: {e}")
}

/// (x = 1/(1-q), latency us) points of `h` from p0 to p99.999, or up to its count allows.
fn percentile_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let top = 1.0 - 1.0 / (h.len().max(2) as f64);
    (0..=100)
        .map(|k| 1.0 - 10f64.powf(-(k as f64) / 20.0))
        .take_while(|&q| q <= top.max(0.5))
        .map(|q| (1.0 / (1.0 - q), h.value_at_quantile(q).max(1) as f64))
        .collect()
}

fn percentile_label(x: &f64) -> String {
    let q = 100.0 * (1.0 - 1.0 / x);
    if q < 1.0 {
        return "0%".into();
    }
    let text = format!("{q:.3}");
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Latency percentile curves of several runs on one chart; returns the file written.
pub fn latency_curves(
    dir: &Path,
    name: &str,
    title: &str,
    series: &[(String, &Histogram<u64>)],
) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}.svg"));
    let curves: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(n, h)| (n.clone(), percentile_points(h)))
        .collect();
    let y_max = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(10.0, f64::max);
    // From the decade below the fastest point: the curves fill the chart.
    let y_min = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(y_max, f64::min);
    let y_min = 10f64.powf((y_min / 2.0).max(1.0).log10().floor());
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1.0..1e5f64).log_scale(), (y_min..y_max * 1.5).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency (us)")
        .x_label_formatter(&percentile_label)
        .draw()
        .map_err(err)?;
    for (i, (n, points)) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(n.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    drop(chart);
    drop(root);
    Ok(path)
}

/// Write throughput over time (MB/s per sampling interval); returns the file written.
pub fn throughput(dir: &Path, name: &str, samples: &[(f64, f64)]) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}.svg"));
    let t_max = samples.last().map_or(1.0, |s| s.0).max(1e-3);
    let y_max = samples.iter().map(|s| s.1).fold(1.0, f64::max);
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("write throughput", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..y_max * 1.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("MB/s")
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            samples.iter().copied(),
            BLUE.stroke_width(2),
        ))
        .map_err(err)?;
    root.present().map_err(err)?;
    drop(chart);
    drop(root);
    Ok(path)
}

/// `--plot DIR`: the write throughput and, per kind of lookup, its percentile curves next to
/// the network round trip. Returns the files written.
pub fn write_all(
    dir: &Path,
    write: Option<&crate::report::WriteResult>,
    lookups: &[(String, &crate::report::LookupResult)],
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    if let Some(w) = write {
        files.push(throughput(dir, "write-throughput", &w.throughput_mb_per_s)?);
    }
    for by in ["offset", "timestamp"] {
        let series: Vec<(String, &Histogram<u64>)> = lookups
            .iter()
            .filter(|(n, _)| n.starts_with(by) || n == "network round trip")
            .filter_map(|(n, r)| r.hist.as_ref().map(|h| (n.clone(), h)))
            .collect();
        if series.iter().any(|(n, _)| n.starts_with(by)) {
            let title = format!("lookup by {by}: latency by percentile");
            files.push(latency_curves(
                dir,
                &format!("lookup-{by}"),
                &title,
                &series,
            )?);
        }
    }
    for f in &files {
        println!("plot: {}", f.display());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_svg_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(50 + v).unwrap();
        }
        let p = latency_curves(dir.path(), "lat", "t", &[("a".into(), &h)]).unwrap();
        let svg = std::fs::read_to_string(p).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("polyline"));
        let p = throughput(dir.path(), "tp", &[(0.5, 100.0), (1.0, 120.0)]).unwrap();
        assert!(std::fs::read_to_string(p).unwrap().contains("polyline"));
        assert_eq!(percentile_label(&100.0), "99%");
        assert_eq!(percentile_label(&2.0), "50%");
        assert_eq!(percentile_label(&1000.0), "99.9%");
    }
}
