#!/bin/bash
# As the official image's script of this name: Kafka's BrokerApiVersionsCommand.
exec java -Xmx128m -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties \
  -cp '/opt/kafka/libs/*' org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
