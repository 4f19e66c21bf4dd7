//! The seed's experiment: a small ray tracer (spheres, a light, shadows, reflections) whose
//! every pixel is a region, with the counters read around each pixel and per-pixel
//! statistics printed as a table (avg, p90, max, ...).
//!
//! ```sh
//! cargo run --release -p cpiflame-markers --example pixels [-- WIDTHxHEIGHT] [--json]
//! ```
//!
//! Counts instructions, cycles, branches and branch-misses where the hardware events open,
//! and task-clock, page-faults and context-switches otherwise (VMs without a PMU). The frame
//! is also rendered without markers, so the cost of the instrumentation is printed too (the
//! seed measured 17% with two `read()` calls per pixel), and once with `Markers::lap` (one
//! read per pixel: each pixel's reading ends the previous one), as region `pixel (lap)`.

use std::ops::{Add, Mul, Sub};
use std::process::ExitCode;
use std::time::Instant;

use cpiflame_markers::{Error, Markers, DEFAULT_EVENTS, NS, SOFTWARE_EVENTS};

#[derive(Clone, Copy, Debug)]
struct V(f64, f64, f64);

impl Add for V {
    type Output = V;
    fn add(self, o: V) -> V {
        V(self.0 + o.0, self.1 + o.1, self.2 + o.2)
    }
}
impl Sub for V {
    type Output = V;
    fn sub(self, o: V) -> V {
        V(self.0 - o.0, self.1 - o.1, self.2 - o.2)
    }
}
impl Mul<f64> for V {
    type Output = V;
    fn mul(self, k: f64) -> V {
        V(self.0 * k, self.1 * k, self.2 * k)
    }
}
impl V {
    fn dot(self, o: V) -> f64 {
        self.0 * o.0 + self.1 * o.1 + self.2 * o.2
    }
    fn norm(self) -> V {
        self * (1.0 / self.dot(self).sqrt())
    }
    fn mul_v(self, o: V) -> V {
        V(self.0 * o.0, self.1 * o.1, self.2 * o.2)
    }
}

struct Sphere {
    center: V,
    radius: f64,
    color: V,
    reflect: f64,
}

struct Scene {
    spheres: Vec<Sphere>,
    light: V,
}

impl Scene {
    fn new() -> Scene {
        let mut spheres = vec![Sphere {
            center: V(0.0, -1000.0, 0.0),
            radius: 999.0,
            color: V(0.6, 0.6, 0.6),
            reflect: 0.2,
        }];
        // Rings of spheres of two materials, and a mirror in the middle: pixels that see the
        // mirror bounce more rays, as the seed's "slow pixels" did.
        for i in 0..24 {
            let a = f64::from(i) * std::f64::consts::TAU / 12.0;
            let ring = 3.0 + f64::from(i / 12) * 2.5;
            spheres.push(Sphere {
                center: V(ring * a.cos(), -0.4, 8.0 + ring * a.sin()),
                radius: 0.6,
                color: if i % 2 == 0 {
                    V(0.9, 0.3, 0.2)
                } else {
                    V(0.2, 0.4, 0.9)
                },
                reflect: if i % 2 == 0 { 0.0 } else { 0.5 },
            });
        }
        spheres.push(Sphere {
            center: V(0.0, 0.5, 8.0),
            radius: 1.4,
            color: V(0.95, 0.95, 0.95),
            reflect: 0.9,
        });
        Scene {
            spheres,
            light: V(-10.0, 10.0, -5.0),
        }
    }

    /// Nearest hit: (distance, sphere).
    fn hit(&self, orig: V, dir: V) -> Option<(f64, &Sphere)> {
        let mut best: Option<(f64, &Sphere)> = None;
        for s in &self.spheres {
            let oc = orig - s.center;
            let b = oc.dot(dir);
            let c = oc.dot(oc) - s.radius * s.radius;
            let disc = b * b - c;
            if disc < 0.0 {
                continue;
            }
            let sq = disc.sqrt();
            let t = if -b - sq > 1e-6 { -b - sq } else { -b + sq };
            if t > 1e-6 && best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, s));
            }
        }
        best
    }

    fn trace(&self, orig: V, dir: V, depth: u32) -> V {
        let Some((t, s)) = self.hit(orig, dir) else {
            return V(0.5, 0.7, 1.0) * (0.5 + 0.5 * dir.1.max(0.0)); // sky
        };
        let p = orig + dir * t;
        let n = (p - s.center).norm();
        let to_light = (self.light - p).norm();
        let lit = self.hit(p + n * 1e-4, to_light).is_none();
        let diffuse = if lit { n.dot(to_light).max(0.0) } else { 0.0 };
        let mut color = s.color * (0.1 + 0.9 * diffuse);
        if s.reflect > 0.0 && depth < 5 {
            let r = dir - n * (2.0 * dir.dot(n));
            let bounced = self.trace(p + n * 1e-4, r.norm(), depth + 1);
            color = color * (1.0 - s.reflect) + bounced.mul_v(V(1.0, 1.0, 1.0)) * s.reflect;
        }
        color
    }

    /// One pixel: `samples` rays jittered inside it, averaged, packed as 0xRRGGBB.
    fn pixel(&self, x: u32, y: u32, w: u32, h: u32, samples: u32) -> u32 {
        let mut c = V(0.0, 0.0, 0.0);
        let aspect = f64::from(w) / f64::from(h);
        for s in 0..samples {
            let jx = (f64::from(s % 4) + 0.5) / 4.0;
            let jy = (f64::from(s / 4 % 4) + 0.5) / 4.0;
            let px = ((f64::from(x) + jx) / f64::from(w) * 2.0 - 1.0) * aspect;
            let py = 1.0 - (f64::from(y) + jy) / f64::from(h) * 2.0;
            let dir = V(px, py, 1.6).norm();
            c = c + self.trace(V(0.0, 0.3, -1.0), dir, 0);
        }
        let c = c * (1.0 / f64::from(samples));
        let byte = |v: f64| (v.clamp(0.0, 1.0) * 255.0) as u32;
        byte(c.0) << 16 | byte(c.1) << 8 | byte(c.2)
    }
}

fn open_markers() -> Result<Markers, Error> {
    match Markers::new(DEFAULT_EVENTS) {
        Ok(m) => Ok(m),
        Err(e) => {
            eprintln!("note: {e}");
            eprintln!("note: counting {} instead", SOFTWARE_EVENTS.join(", "));
            Markers::new(SOFTWARE_EVENTS)
        }
    }
}

fn main() -> ExitCode {
    let mut json = false;
    let (mut w, mut h) = (320u32, 240u32);
    for arg in std::env::args().skip(1) {
        if arg == "--json" {
            json = true;
        } else if let Some((a, b)) = arg.split_once('x') {
            match (a.parse(), b.parse()) {
                (Ok(a), Ok(b)) if a > 0 && b > 0 => (w, h) = (a, b),
                _ => {
                    eprintln!("pixels: bad size '{arg}' (want WIDTHxHEIGHT, e.g. 320x240)");
                    return ExitCode::from(2);
                }
            }
        } else {
            eprintln!("usage: pixels [WIDTHxHEIGHT] [--json]");
            return ExitCode::from(2);
        }
    }
    let scene = Scene::new();
    let samples = 16;
    let mut m = match open_markers() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pixels: {e}");
            return ExitCode::from(1);
        }
    };
    let pixel = m.register("pixel");

    // Warm-up and the bare frame.
    let mut check = 0u64;
    let frame = |check: &mut u64, mut f: Box<dyn FnMut(u32, u32) -> u32 + '_>| {
        let t = Instant::now();
        for y in 0..h {
            for x in 0..w {
                *check = check.wrapping_mul(31).wrapping_add(u64::from(f(x, y)));
            }
        }
        t.elapsed()
    };
    frame(
        &mut check,
        Box::new(|x, y| scene.pixel(x, y, w, h, samples)),
    );
    let bare = frame(
        &mut check,
        Box::new(|x, y| scene.pixel(x, y, w, h, samples)),
    );
    let marked = frame(
        &mut check,
        Box::new(|x, y| {
            m.start(pixel);
            let c = scene.pixel(x, y, w, h, samples);
            m.stop(pixel);
            c
        }),
    );

    // The same frame with lap(): one read per pixel instead of two (a region of its own).
    let lapped = m.register("pixel (lap)");
    let laps = frame(
        &mut check,
        Box::new(|x, y| {
            m.lap(lapped);
            scene.pixel(x, y, w, h, samples)
        }),
    );
    m.stop(lapped);

    // What the markers themselves add to every region: an empty region, measured the same way.
    let empty = m.register("empty region");
    for _ in 0..10_000 {
        m.start(empty);
        m.stop(empty);
    }

    let report = m.report();
    if json {
        if let Err(e) = report.write_json(std::io::stdout().lock()) {
            eprintln!("pixels: writing the report: {e}");
            return ExitCode::from(1);
        }
        return ExitCode::SUCCESS;
    }
    println!(
        "Per-pixel ray tracing stats ({w}x{h}, {samples} rays per pixel, checksum {check:x}):"
    );
    print!("{report}");
    let n = u64::from(w) * u64::from(h);
    let per_pixel_bare = bare.as_nanos() as f64 / n as f64;
    let per_pixel_marked = marked.as_nanos() as f64 / n as f64;
    println!();
    println!(
        "'empty region' is what a start/stop pair adds to every region's counts: subtract its p50 \
         to see the work alone"
    );
    println!(
        "frame without markers: {:.1} ms ({per_pixel_bare:.0} ns per pixel)",
        bare.as_secs_f64() * 1e3
    );
    println!(
        "frame with markers:    {:.1} ms ({per_pixel_marked:.0} ns per pixel): overhead {:.0}%, {:.0} ns per pixel",
        marked.as_secs_f64() * 1e3,
        (per_pixel_marked / per_pixel_bare - 1.0) * 100.0,
        per_pixel_marked - per_pixel_bare
    );
    let per_pixel_laps = laps.as_nanos() as f64 / n as f64;
    println!(
        "frame with lap():      {:.1} ms ({per_pixel_laps:.0} ns per pixel): overhead {:.0}%, {:.0} ns per pixel",
        laps.as_secs_f64() * 1e3,
        (per_pixel_laps / per_pixel_bare - 1.0) * 100.0,
        per_pixel_laps - per_pixel_bare
    );
    if let Some(mean) = m
        .region_stats("pixel")
        .and_then(|r| r.metric(NS))
        .and_then(|ns| ns.summary().mean())
    {
        // The seed's sanity check: per-pixel average times pixels is about the whole frame.
        println!(
            "avg ns x pixels = {:.1} ms (the regions' share of the marked frame: {:.0}%)",
            mean * n as f64 / 1e6,
            mean * n as f64 / marked.as_nanos() as f64 * 100.0
        );
    }
    ExitCode::SUCCESS
}
