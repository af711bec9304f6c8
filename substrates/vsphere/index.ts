export { EXTRA_CONFIG, REPLICA_MODEL, VsphereMachines, vmName, vsphereCredentialsOf } from "./machines";
export type { VsphereCredentials, VspherePlacement, VsphereSettings, VsphereVm } from "./machines";
export { vsphereHosting } from "./bootstrap";
export { VsphereVolumes } from "./volumes";
export type { VsphereVolumeDeps } from "./volumes";
export { byIdNamesOf, datastorePath, diskFileOf, disksOf, isStorageDisk, parseDatastorePath } from "./disks";
export type { VmDisk } from "./disks";
export {
  MoRef,
  Typed,
  VimClient,
  VsphereFault,
  child,
  children,
  escapeXml,
  isFault,
  moRefOf,
  optionValues,
  parseXml,
  textAt,
  toXml,
  xsdString,
} from "./soap";
export type { ObjectContent, ServiceContent, VsphereConnectionOptions, XmlNode, XmlValue } from "./soap";
