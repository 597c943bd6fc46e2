// npm's preinstall: stops on a Node older than the TypeScript sources need, with one line saying what to do.
// Plain old JavaScript on purpose: it must run on the old Node it refuses.
var parts = process.versions.node.split('.').map(Number);
if (parts[0] < 22 || (parts[0] === 22 && parts[1] < 18)) {
  console.error('Trackstack needs Node.js 22.18 or newer (24 LTS recommended); found ' + process.version + '. Get Node 24 from https://nodejs.org/ or run: npx -y node@24 --version (nvm: nvm install 24).');
  process.exit(1);
}
