export { AddressGate, type AddressDecision, type AddressGateOptions, type AddressGroupKeys, addressGroupKeys, type AddressLimits } from './address-gate.js';
export { decodeEntry, encodeEntry, type FrontierUrl, UrlFlag } from './entry.js';
export {
  type ClaimResult,
  Frontier,
  type FrontierOptions,
  type FrontierStats,
  type GateDecision,
  type HostTakeover,
  type HostBorrow,
  type GateTicket,
  type HostHealthState,
  type HostNote,
  type HostScore,
  type PushLimits,
  type PushResult,
  type RefillItem,
  type RefillTicket,
  type RefusalReason,
  type Spill,
  type RestoreItem,
  HANDED_UNTIL,
  type Lease,
  type PartitionStats,
  type PushItem,
} from './frontier.js';
export { ADMISSION_RESUME_FRACTION, Admission, type AdmissionLimits, admissionLimits, admissionState, type AdmissionState, type AdmissionStatus } from './admission.js';
export { admissionKey, type FrontierKeys, frontierKeys } from './keys.js';
export { entryTime, PROCESS_GROUP, type ProcessEntry, ProcessStream } from './process-stream.js';
export { HashRing, murmur3 } from './ring.js';
export { AUTHORITY_SATURATION, authorityOf, claimRank, type HostRankOptions, type HostScoreParts, hostScore, MAX_RANKED_HOSTS, NO_HOST_RANK, rankedHosts } from './rank.js';
