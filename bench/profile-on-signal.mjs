// Preloaded into a process the bench does not start itself (NODE_OPTIONS=--import, where
// --cpu-prof is not allowed): with BENCH_CPU_PROFILE=FILE, the first SIGUSR2 starts V8's sampling
// profiler (every 100 µs), the second writes the profile to FILE (renamed into place when complete).
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const file = process.env.BENCH_CPU_PROFILE?.trim();
if (file) {
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  let running = false;
  process.on('SIGUSR2', async () => {
    if (!running) {
      running = true;
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 100 });
      await post('Profiler.start');
      return;
    }
    running = false;
    const { profile } = await post('Profiler.stop');
    writeFileSync(`${file}.part`, JSON.stringify(profile));
    renameSync(`${file}.part`, file);
  });
}
