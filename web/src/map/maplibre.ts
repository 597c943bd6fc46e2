/** MapLibre and its stylesheet: imported on demand, so the library is a chunk of its own, loaded by map screens only. */
import * as maplibre from 'maplibre-gl';
import 'maplibre-gl/dist/maplibre-gl.css';
import workerUrl from 'maplibre-gl/dist/maplibre-gl-worker.mjs?url';

// MapLibre looks for its worker beside its own module; bundled, that is the hashed asset Vite emits.
maplibre.setWorkerUrl(workerUrl);

export default maplibre;
