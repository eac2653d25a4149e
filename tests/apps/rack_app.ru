# Rack test app for the Puma and Unicorn tests (stdlib only), configured by environment variables,
# as tests/apps/wsgi_app.py is for gunicorn.
#
# - APP_DATA_MB (default 0): that many MB of data built at load, as one large String (written,
#   so resident). Under Puma's preload_app! / Unicorn's preload_app true it is built once in the
#   master and shared copy-on-write by the workers (the GC marks the String's object slot, not its
#   malloc'd bytes); without preloading every worker builds its own copy.
#
# Paths: / trivial answer; /pid the worker's pid; /cpu?ms=N burns about N ms of CPU (default 20);
# /sleep?ms=N waits N ms without CPU (default 30); /leak keeps ~100 KB per request for the life
# of the worker; /lazy grows the worker by LAZY_MB (16) MiB of strings over its first LAZY_REQUESTS
# (20) requests, then stays (an application that builds caches and loads code lazily after boot:
# what preload_app! cannot share, and Puma's fork_worker refork can: workers reforked from a worker
# 0 that has served them share its copy); /garbage?kb=N builds N KiB (default 1024) of 4 KiB strings
# and drops them (their bytes malloc'd in the arena of the thread that serves: with threads, each
# of a worker's threads may hold an arena of its own, see MALLOC_ARENA_MAX); /data the data size and the pid that built it; /hold?ms=N (default 500) holds the
# request N ms without CPU, counting the requests in flight in this process, and answers
# "pid P in_flight_max M": the most in flight in this process at once since it started (a Puma
# worker's threads). Answers to all but / start with "pid N".

DATA_MB = Integer(ENV.fetch("APP_DATA_MB", "0"))
DATA = ("\x00".b + (1..255).map(&:chr).join.b) * (DATA_MB * 4096)
BUILT_IN = Process.pid
LEAK = []
LAZY = []
LAZY_MB = 16
LAZY_REQUESTS = 20
LAZY_STRINGS = LAZY_MB * 256 / LAZY_REQUESTS # 4 KiB strings per request
IN_FLIGHT = [0, 0] # /hold: the requests in flight in this process now, the most at once
IN_FLIGHT_LOCK = Mutex.new

def burn(ms)
  finish = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) + ms / 1000.0
  acc = 0
  while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) < finish
    200.times { |i| acc = (acc * 31 + i) & 0xFFFFFFFF }
  end
  acc
end

def hold(ms)
  IN_FLIGHT_LOCK.synchronize do
    IN_FLIGHT[0] += 1
    IN_FLIGHT[1] = IN_FLIGHT.max
  end
  begin
    sleep(ms / 1000.0)
  ensure
    IN_FLIGHT_LOCK.synchronize { IN_FLIGHT[0] -= 1 }
  end
  IN_FLIGHT[1]
end

def query_ms(env, default)
  value = env["QUERY_STRING"].to_s[/(?:\A|&)ms=([0-9.]+)/, 1]
  value ? Float(value) : default
end

def format_ms(ms)
  ms == ms.to_i ? ms.to_i.to_s : ms.to_s
end

app = lambda do |env|
  pid = Process.pid
  status = 200
  body = case env["PATH_INFO"]
         when "/", "" then "hello\n"
         when "/pid" then "#{pid}\n"
         when "/cpu"
           ms = query_ms(env, 20.0)
           "pid #{pid} cpu_ms #{format_ms(ms)} checksum #{burn(ms)}\n"
         when "/sleep"
           ms = query_ms(env, 30.0)
           sleep(ms / 1000.0)
           "pid #{pid} slept_ms #{format_ms(ms)}\n"
         when "/hold" then "pid #{pid} in_flight_max #{hold(query_ms(env, 500.0))}\n"
         when "/leak"
           LEAK << ("x" * 102_400)
           "pid #{pid} leaked #{LEAK.size} x 100 KB\n"
         when "/lazy"
           LAZY << Array.new(LAZY_STRINGS) { |i| (i % 256).chr * 4096 } if LAZY.size < LAZY_REQUESTS
           "pid #{pid} lazy #{LAZY.size}/#{LAZY_REQUESTS}\n"
         when "/garbage"
           kb = Integer(env["QUERY_STRING"].to_s[/(?:\A|&)kb=([0-9]+)/, 1] || 1024)
           built = Array.new(kb / 4) { |i| (i % 256).chr * 4096 }
           "pid #{pid} garbage #{built.size} x 4 KiB\n"
         when "/data" then "pid #{pid} bytes #{DATA.bytesize} built_in #{BUILT_IN}\n"
         else
           status = 404
           "not found\n"
         end
  [status, { "Content-Type" => "text/plain", "Content-Length" => body.bytesize.to_s }, [body]]
end

run app
