// Builds a container image of the single executable without a container daemon or a registry:
// an OCI image layout (https://github.com/opencontainers/image-spec), one layer holding the
// executable, the C libraries it links (read from this machine with ldd), a non-root user and
// the package already unpacked, tarred so that `docker load`, `podman load` or
// `skopeo copy oci-archive:…` take it. Usage:
//   node scripts/executable/image.mjs EXECUTABLE [OUT_DIR] [ROOTFS_DIR]
// (OUT_DIR default: the executable's directory; ROOTFS_DIR, when given, keeps the layer's files
// unpacked there, which CI runs with chroot.) Linux only.
import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {gzipSync} from 'node:zlib'

const [executableArg, outArg, rootfsArg] = process.argv.slice(2)
if (!executableArg) {
  console.error('usage: node scripts/executable/image.mjs EXECUTABLE [OUT_DIR] [ROOTFS_DIR]')
  process.exit(2)
}
const executable = path.resolve(executableArg)
const out = path.resolve(outArg ?? path.dirname(executable))
const work = mkdtempSync(path.join(tmpdir(), 'airlock-image-'))
const rootfs = rootfsArg ? path.resolve(rootfsArg) : path.join(work, 'rootfs')
const {version} = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'package.json'), 'utf8'))
// distroless's numbers for its nonroot user, which Kubernetes' runAsNonRoot accepts by uid.
const nonroot = 65532
const sha256 = (data) => createHash('sha256').update(data).digest('hex')
const arch = {x64: 'amd64', arm64: 'arm64'}[process.arch] ?? process.arch

try {
  rmSync(rootfs, {recursive: true, force: true})
  const put = (file, data, mode = 0o644) => {
    mkdirSync(path.join(rootfs, path.dirname(file)), {recursive: true})
    writeFileSync(path.join(rootfs, file), data, {mode})
  }
  mkdirSync(path.join(rootfs, 'usr/local/bin'), {recursive: true})
  copyFileSync(executable, path.join(rootfs, 'usr/local/bin/airlock'))
  chmodSync(path.join(rootfs, 'usr/local/bin/airlock'), 0o755)
  // The C and C++ runtime the Node.js binary links, at the paths its loader looks in.
  const linked = execFileSync('ldd', [executable], {encoding: 'utf8'})
    .split('\n')
    .map((line) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)?.[1])
    .filter(Boolean)
  for (const library of linked) {
    mkdirSync(path.join(rootfs, path.dirname(library)), {recursive: true})
    copyFileSync(realpathSync(library), path.join(rootfs, library))
  }
  put(
    'etc/passwd',
    `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${nonroot}:${nonroot}:nonroot:/home/nonroot:/sbin/nologin\n`,
  )
  put('etc/group', `root:x:0:\nnonroot:x:${nonroot}:\n`)
  for (const dir of ['tmp', 'home/nonroot']) mkdirSync(path.join(rootfs, dir), {recursive: true})
  chmodSync(path.join(rootfs, 'tmp'), 0o1777)
  chownSync(path.join(rootfs, 'home/nonroot'), nonroot, nonroot)
  // Unpacked at build time, read-only at run time: the container starts as fast as a second run
  // and works with a read-only root filesystem.
  execFileSync(executable, ['--version'], {
    env: {...process.env, AIRLOCK_EXECUTABLE_CACHE: path.join(rootfs, 'opt/airlock')},
    stdio: 'ignore',
  })

  // One layer, byte for byte the same for the same files: sorted, no times, numeric owners.
  const layerTar = path.join(work, 'layer.tar')
  execFileSync('tar', [
    '--sort=name',
    '--mtime=@0',
    '--numeric-owner',
    '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
    '-C',
    rootfs,
    '-cf',
    layerTar,
    '.',
  ])
  const layer = readFileSync(layerTar)
  const layerGz = gzipSync(layer, {level: 9})
  const config = Buffer.from(
    JSON.stringify({
      architecture: arch,
      os: 'linux',
      config: {
        User: `${nonroot}:${nonroot}`,
        Entrypoint: ['/usr/local/bin/airlock'],
        Cmd: ['--help'],
        WorkingDir: '/home/nonroot',
        Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'HOME=/home/nonroot', 'AIRLOCK_EXECUTABLE_CACHE=/opt/airlock'],
        Labels: {'org.opencontainers.image.title': 'airlock', 'org.opencontainers.image.version': version},
      },
      rootfs: {type: 'layers', diff_ids: [`sha256:${sha256(layer)}`]},
      history: [{created_by: 'scripts/executable/image.mjs'}],
    }),
  )
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: `sha256:${sha256(config)}`,
        size: config.length,
      },
      layers: [
        {
          mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
          digest: `sha256:${sha256(layerGz)}`,
          size: layerGz.length,
        },
      ],
    }),
  )
  const layout = path.join(work, 'layout')
  const blob = (data) => {
    mkdirSync(path.join(layout, 'blobs/sha256'), {recursive: true})
    writeFileSync(path.join(layout, 'blobs/sha256', sha256(data)), data)
    return `blobs/sha256/${sha256(data)}`
  }
  const [configPath, layerPath] = [blob(config), blob(layerGz)]
  blob(manifest)
  const tag = `airlock:${version}`
  writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({imageLayoutVersion: '1.0.0'}))
  writeFileSync(
    path.join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${sha256(manifest)}`,
          size: manifest.length,
          annotations: {
            'io.containerd.image.name': `docker.io/library/${tag}`,
            'org.opencontainers.image.ref.name': version,
          },
        },
      ],
    }),
  )
  // Docker before 25 loads only its own archive format: its manifest.json beside the OCI index.
  writeFileSync(
    path.join(layout, 'manifest.json'),
    JSON.stringify([{Config: configPath, RepoTags: [tag], Layers: [layerPath]}]),
  )
  mkdirSync(out, {recursive: true})
  const name = `airlock-image-${version}-linux-${arch}.tar`
  execFileSync('tar', [
    '--sort=name',
    '--mtime=@0',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '-C',
    layout,
    '-cf',
    path.join(out, name),
    '.',
  ])
  writeFileSync(path.join(out, `${name}.sha256`), `${sha256(readFileSync(path.join(out, name)))}  ${name}\n`)
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`
  console.log(
    `${path.join(out, name)}: ${tag}, ${mb(statSync(path.join(out, name)).size)} (${mb(layer.length)} unpacked), image ${`sha256:${sha256(manifest)}`.slice(0, 19)}`,
  )
} finally {
  rmSync(work, {recursive: true, force: true})
}
