//! Flame graphs and perf-script folding for `pounder profile`, by inferno (the Rust port of
//! Brendan Gregg's FlameGraph scripts).

use inferno::collapse::perf::{Folder, Options as PerfOptions};
use inferno::collapse::Collapse;
use inferno::flamegraph::{self, Options};

/// The first line that is not `frame;...;frame COUNT` (inferno skips those silently: a profile
/// would lose samples without a word).
fn bad_folded_line(folded: &str) -> Option<String> {
    for (i, line) in folded.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ok = match line.rsplit_once(' ') {
            Some((stack, count)) => !stack.trim().is_empty() && count.parse::<u64>().is_ok(),
            None => false,
        };
        if !ok {
            let shown: String = line.chars().take(60).collect();
            return Some(format!(
                "folded stacks: line {} is not 'frame;...;frame COUNT': {shown:?}",
                i + 1
            ));
        }
    }
    None
}

/// The SVG of the flame graph of `folded` (one `outer;...;leaf COUNT` per line), titled `title`,
/// counts called `count_name`; colours from the function names' hashes (the same every time).
pub fn flamegraph_svg(folded: &str, title: &str, count_name: &str) -> Result<String, String> {
    if let Some(msg) = bad_folded_line(folded) {
        return Err(msg);
    }
    if folded.trim().is_empty() {
        return Err("folded stacks: no samples to draw".into());
    }
    let mut opt = Options::default();
    opt.title = title.to_string();
    opt.count_name = count_name.to_string();
    opt.hash = true;
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut opt, folded.lines(), &mut svg)
        .map_err(|e| format!("flame graph: {e}"))?;
    String::from_utf8(svg).map_err(|_| "flame graph: the SVG is not UTF-8".into())
}

/// `perf script` text folded into `comm-PID;outer;...;leaf COUNT` lines (one sample counts 1
/// unless the script shows each sample's period).
pub fn collapse_perf(script: &str) -> Result<String, String> {
    let mut opt = PerfOptions::default();
    opt.include_pid = true;
    opt.nthreads = 1;
    let mut folded = Vec::new();
    Folder::from(opt)
        .collapse(script.as_bytes(), &mut folded)
        .map_err(|e| format!("perf script: {e}"))?;
    String::from_utf8(folded).map_err(|_| "perf script: the folded stacks are not UTF-8".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: &str = "main;handler;hot 80\nmain;handler;cold 20\n";

    #[test]
    fn svg_names_every_function_and_is_the_same_every_time() {
        let a = flamegraph_svg(FOLDED, "t", "samples").unwrap();
        assert!(a.starts_with("<?xml"));
        for f in ["main", "handler", "hot", "cold", "samples"] {
            assert!(a.contains(f), "{f} missing");
        }
        assert_eq!(a, flamegraph_svg(FOLDED, "t", "samples").unwrap());
    }

    #[test]
    fn bad_lines_and_no_samples_are_errors() {
        let e = flamegraph_svg("main;hot 3\nmain;cold\n", "t", "ns").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(flamegraph_svg("\n", "t", "ns").is_err());
    }

    #[test]
    fn perf_script_is_folded_with_the_pid_in_the_root() {
        let script = "php-fpm8.2 4242/4242 100.000001: cpu-clock:ppp: \n\
                      \t 1111 zend_hot (/usr/sbin/php-fpm8.2)\n\
                      \t 2222 execute_ex (/usr/sbin/php-fpm8.2)\n\
                      \t 3333 main (/usr/sbin/php-fpm8.2)\n\n\
                      php-fpm8.2 4242/4242 100.010001: cpu-clock:ppp: \n\
                      \t 1111 zend_hot (/usr/sbin/php-fpm8.2)\n\
                      \t 2222 execute_ex (/usr/sbin/php-fpm8.2)\n\
                      \t 3333 main (/usr/sbin/php-fpm8.2)\n\n";
        let folded = collapse_perf(script).unwrap();
        assert_eq!(folded.trim(), "php-fpm8.2-4242;main;execute_ex;zend_hot 2");
    }
}
