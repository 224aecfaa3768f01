base rsa
# A receipt a newer version wrote, with a field this version does not know
# (SPEC 3, "Forward compatibility"): read by its known fields.
RECEIPT_MORE=',
  "attestation": {"by": "a newer runbook", "sig": "AAAA"}'
receipt op-1 renewed done
